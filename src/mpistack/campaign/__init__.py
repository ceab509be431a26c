"""Campaigns: expand a campaign file into cases, run them crash-safe, summarise container vs native."""
