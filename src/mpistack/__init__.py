"""mpistack: does MPI in a container run at native speed, and if not, why."""

__version__ = "0.1.0"
