"""Campaigns: expand a campaign file into cases, run them crash-safe, record every launch."""
