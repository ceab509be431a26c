"""Launcher messages printed when a job ends abnormally, as the launchers print them.

Open MPI's block as mpirun 4.x prints it (the same text appears, from mpiexec, in E3SM-Project/scream pull
request 2188, https://github.com/E3SM-Project/scream/pull/2188); MPICH Hydra's block as quoted in
je-santos/MPLBM-UT issue 92, 'How can i solve signal9?' (https://github.com/je-santos/MPLBM-UT/issues/92);
srun's lines as quoted in DifferentiableUniverseInitiative/flowpm issue 80, 'Benchmarking full N-body
simulation on GPU clusters' (https://github.com/DifferentiableUniverseInitiative/flowpm/issues/80).
"""

OPEN_MPI_ABORT = """\
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[41345,1],0]
  Exit code:    1
--------------------------------------------------------------------------
"""

MPICH_BAD_TERMINATION = """\

===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 92248 RUNNING AT fzh-desktop
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
"""

SRUN_ERRORS = """\
srun: error: r10i0n8: task 3: Exited with exit code 255
srun: Terminating job step 1751099.0
srun: error: r10i0n8: tasks 0-2: Terminated
srun: Force Terminated job step 1751099.0
"""

ABORT_BLOCKS = {"openmpi": OPEN_MPI_ABORT, "mpich": MPICH_BAD_TERMINATION, "srun": SRUN_ERRORS}

# OSU 7.x latency with validation: size 8 fails, the benchmark prints its error and exits non-zero.
LATENCY_VALIDATION_FAILED = """\
# OSU MPI Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)        Validation
1                       0.21              Pass
2                       0.22              Pass
4                       0.22              Pass
8                       0.23              Fail
DATA VALIDATION ERROR: ./osu_latency exited with status 1 on message size 8.
"""
