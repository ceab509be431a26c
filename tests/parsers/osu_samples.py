"""OSU output as the micro-benchmarks print it, one sample per version family and test kind."""

LATENCY_5 = """\
# OSU MPI Latency Test v5.6.3
# Size          Latency (us)
0                       0.22
1                       0.23
2                       0.24
4194304               512.50
"""

BW_5 = """\
# OSU MPI Bandwidth Test v5.6.3
# Size      Bandwidth (MB/s)
1                       5.29
2                      10.61
4194304             11250.21
"""

MBW_MR_5 = """\
# OSU MPI Multiple Bandwidth / Message Rate Test v5.6.3
# [ pairs: 1 ] [ window size: 64 ]
# Size                  MB/s        Messages/s
1                       4.45        4450446.96
2                       8.93        4463186.20
"""

MULTI_LAT_5 = """\
# OSU MPI Multi Latency Test v5.6.3
# Size          Latency (us)
0                       0.25
1                       0.27
"""

ALLREDUCE_FULL_5 = """\
# OSU MPI Allreduce Latency Test v5.6.3
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
4                       1.05              0.98              1.12        1000
8                       1.07              0.99              1.15        1000
"""

BARRIER_5 = """\
# OSU MPI Barrier Latency Test v5.6.3
# Avg Latency(us)
             1.23
"""

BARRIER_FULL_7 = """\
# OSU MPI Barrier Latency Test v7.4
# Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
             1.23              1.20              1.25        1000
"""

LATENCY_TAIL_7 = """\
# OSU MPI Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)   P50 Tail Lat(us)   P90 Tail Lat(us)   P99 Tail Lat(us)
1                       0.21               0.20               0.22               0.30
2                       0.22               0.21               0.23               0.31
"""

BW_TAIL_7 = """\
# OSU MPI Bandwidth Test v7.3
# Datatype: MPI_CHAR.
# Size      Bandwidth (MB/s)   P50 Tail BW(MB/s)   P90 Tail BW(MB/s)   P99 Tail BW(MB/s)
1                       2.51               2.60               2.40               2.10
"""

CUDA_SEND_BUFFER_5 = """\
# OSU MPI-CUDA Latency Test v5.6.3
# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)
# Size          Latency (us)
0                       1.04
1                       1.10
"""

VALIDATION_ERROR_6 = """\
# OSU MPI Allreduce Latency Test v6.1
# Datatype: MPI_INT.
# Size       Avg Latency(us)        Validation
4                       1.05              Pass
8                       1.08              Fail
DATA VALIDATION ERROR: osu_allreduce exited with status 1 on message size 8.
"""

ALLTOALL_7_FULL = """\
# OSU MPI All-to-All Personalized Exchange Latency Test v7.5
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations        Validation
1                      22.25             21.00             23.50        1000              Pass
2                      22.34             21.10             23.60        1000              Pass
"""

ALL_SAMPLES = [LATENCY_5, BW_5, MBW_MR_5, MULTI_LAT_5, ALLREDUCE_FULL_5, BARRIER_5, BARRIER_FULL_7,
               LATENCY_TAIL_7, BW_TAIL_7, CUDA_SEND_BUFFER_5, VALIDATION_ERROR_6, ALLTOALL_7_FULL]
