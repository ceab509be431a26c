"""The schema revision this mpistack reads and writes: bumped with every migration under store/migrations/versions,
checked when a store is opened. (Its own module: the fast read path checks it without importing the schema.)"""

SCHEMA_REVISION = "0005"
