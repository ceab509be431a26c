"""The signature bank against the exact messages it is meant to explain (as MPI libraries, PMIx, UCX, libfabric,
Slurm and container tools print them), and a malformed bank refused with the file, entry and field named."""

from __future__ import annotations

import pytest

from mpistack.doctor.signatures import SignatureError, load_bank, match

# (signature id, a message as printed; the sources are in the bank beside each entry)
MESSAGES = [
    ("podman-ipc-host-no-mqueue", "Error: statfs /dev/mqueue: no such file or directory"),
    ("hydra-foreign-control-bytes", "[mpiexec@vm] HYD_pmcd_pmiserv_proxy_init_cb (pm/pmiserv/pmiserv_cb.c:460): "
                                    "cannot find proxy with ID 1651663207"),
    ("cma-permission-denied", "WARNING: Linux kernel CMA support was requested via the\n"
                              "btl_vader_single_copy_mechanism MCA variable, but CMA support is\n"
                              "not available due to restrictive ptrace settings."),
    ("cma-read-eperm", "Read -1, expected 65536, errno = 1"),
    ("smsc-cma-no-permission", "mca_smsc_cma_module_get_endpoint: can not proceed. processes do not have the "
                               "necessary permissions (i.e., CAP_SYS_PTRACE). PID 12 <-> 11 (rc = -1)"),
    ("ucx-cma-eperm", "process_vm_readv delivered 0 instead of 480960, error message Operation not permitted"),
    ("shm-target-full", "It appears as if there is not enough space for /dev/shm/sm_segment.vm.0.24f00001.0 (the "
                        "shared-memory backing\nfile). It is likely that your MPI job will now either abort"),
    ("shm-target-full", "2 more processes have sent help message help-opal-shmem-mmap.txt / target full"),
    ("bus-error", "[vm:00012] Signal: Bus error (7)\n[vm:00012] Signal code: Non-existant physical address (2)"),
    ("ucx-posix-oom", "ucp_worker.c:1413 UCX ERROR uct_iface_open(posix/memory) failed: Out of memory"),
    ("mpich-shm-alloc", "MPID_Comm_commit_pre_hook(151): \nMPIDU_Init_shm_init(179)......: unable to allocate shared "
                        "memory"),
    ("ucx-posix-shm-full", "[1795693715.355933] [vm:9    :0]        mm_posix.c:187  UCX  ERROR   Not enough memory "
                           "to write total of 4292720 bytes. Please check that /dev/shm or the directory you "
                           "specified has more available memory."),
    ("ucx-worker-no-resource", "init_worker(71)...............:  ucx function returned with failed status(ucx_init.c "
                               "71 init_worker No resources are available to initiate the operation)"),
    ("fi-getinfo-nodata", "libfabric:1234:core:core:fi_getinfo_():1012<warn> fi_getinfo: provider cxi returned -61 "
                          "(No data available)"),
    ("mpich-find-provider", "find_provider(1427).........: OFI fi_getinfo() failed (ofi_init.c:1427:find_provider:"),
    ("pmix-psec", "A requested component was not found ...\n  Framework: psec\n  Component: munge"),
    ("pmix-gds-ds12", "PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168"),
    ("ompi-no-slurm-pmi", 'The application appears to have been direct launched using "srun",\n'
                          "but OMPI was not built with SLURM's PMI support and therefore cannot\nexecute."),
    ("pmix-unreachable-singletons", "No PMIx server was reachable, but a PMI1/2 was detected.\n"
                                    "If srun is being used to launch application, 4 singletons will be started."),
    ("pmi2-init-failed", "PMI2_Init failed to intialize.  Return code: 1"),
    ("mpich-singinit", "PMII_singinit: execv failed: No such file or directory"),
    ("ranks-did-not-join", "mpistack-bench: error: barrier requires at least two processes (got 1)"),
    ("gtl-not-linked", "MPICH ERROR [Rank 0] [job id 1] [Mon] [nid] - Abort(-1) (rank 0 in comm 0): "
                       "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked"),
    ("not-cuda-aware", "Read -1, expected 65536, errno = 14"),
    ("xpmem-make-failed", "WARNING: Could not generate an xpmem segment id for this process' address space."),
    ("ucx-xpmem-unavailable", "ucp_context.c:731 UCX WARN intra-node device 'xpmem' is not available, please use "
                              "one or more of: 'memory'(cma)"),
    ("sarus-abi", "Failed to activate MPI support. Host's MPI library /usr/lib/libmpi.so.12 is not ABI compatible "
                  "with container's MPI library /usr/lib/libmpi.so.40."),
    ("pyxis-errors", "pyxis: [ERROR] Failed to refresh the dynamic linker cache"),
    ("step-creation-disabled", "srun: Job step creation temporarily disabled, retrying (Requested nodes are busy)"),
    ("step-creation-disabled", "srun: Job 18952480 step creation temporarily disabled, retrying (Requested nodes are "
                               "busy)"),
    ("ucx-tls-empty", "ucp_context.c:1102 UCX  ERROR The TLs list is empty. Please specify the transports"),
    # excerpts written from the public threads each new entry cites (pids, hosts and paths as there, or changed)
    ("ucx-posix-proc-link-denied", "[1688710000.495329] [c7:2019617:0]       mm_posix.c:195  UCX  ERROR open("
                                   "file_name=/proc/2019618/fd/20 flags=0x0) failed: Permission denied"),
    ("ucx-posix-proc-link-denied", "[1712.1] [node-a17:88:0]  mm_posix.c:219  UCX  ERROR   open(file_name=/proc/91/fd/"
                                   "35 flags=0x0) failed: Permission denied"),
    ("ucx-mm-connect-failed", "[1662593980.908470] [slurm-pg0-4:25595:0]           mm_ep.c:159  UCX  ERROR   mm ep "
                              "failed to connect to remote FIFO id 0xc0000008c00063ff: Shared memory error"),
    ("vader-cma-user-namespaces", "WARNING: The default btl_vader_single_copy_mechanism CMA is\n"
                                  "not available due to different user namespaces."),
    ("pmix-version-skew", "[nid200018:821449] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104"),
    ("pmix-version-skew", "[nid200019:1324764] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line "
                          "750"),
    ("pmix-gds-dstore", "[oe-riscv-78:503876] PMIX ERROR: ERROR in file dstore_base.c at line 2267"),
    ("pmix-gds-dstore", "[nid16980:96732] PMIX ERROR: ERROR in file ../../../../../../../opal/mca/pmix/pmix2x/pmix/src/"
                        "dstore/pmix_esh.c at line 2201"),
    ("ompi-tcp-unexpected-peer", "[second-node][[22157,1],4][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_"
                                 "ack] received unexpected process identifier [[22157,1],7]"),
    ("ompi-tcp-unexpected-peer", "Open MPI detected an inbound MPI TCP connection request from a peer\n"
                                 "that appears to be part of this MPI job (i.e., it identified itself as"),
    ("ompi-component-not-loaded", "[build-25072227:04098] mca_base_component_repository_open: unable to open "
                                  "mca_btl_openib: librdmacm.so.1: cannot open shared object file: No such file or "
                                  "directory (ignored)"),
    ("ompi-component-not-loaded", "[xanadu-20:23503] mca_base_component_repository_open: unable to open mca_plm_tm: "
                                  "libtorque.so.2: cannot open shared object file: No such file or directory "
                                  "(ignored)"),
    ("abi-undefined-symbol", "../../build/gnu/ocean_only/repro/MOM6: symbol lookup error: /usr/lib/libmpi_mpifh.so.12: "
                             "undefined symbol: mpi_fortran_weights_empty"),
    ("abi-undefined-symbol", "ImportError: /opt/venv/lib/python3.10/site-packages/mpi4py/MPI.cpython-310-x86_64-linux-"
                             "gnu.so: undefined symbol: ompi_mpi_errors_abort"),
    ("mpi-library-not-found", "./osu_bw: error while loading shared libraries: libmpi.so.40: cannot open shared object "
                              "file: No such file or directory"),
    ("mpi-library-not-found", "ImportError: libopen-pal.so.80: cannot open shared object file: No such file or "
                              "directory\n/usr/bin/osu_latency: error while loading shared libraries: libfabric.so.1: "
                              "cannot open shared object file: No such file or directory"),
    ("nccl-shm-too-small", "ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory "
                           "segment /dev/shm/nccl-KWfVyt (size 5967872)"),
    ("nccl-shm-too-small", "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No "
                           "space left on device"),
    ("ompi-no-fabric-interface", "[[40111,1],0]: A high-performance Open MPI point-to-point messaging module\n"
                                 "was unable to find any relevant network interfaces:"),
    ("ibverbs-no-driver", "libibverbs: Warning: no userspace device-specific driver found for "
                          "/sys/class/infiniband_verbs/uverbs0"),
    ("ompi-unreachable-peers", "At least one pair of MPI processes are unable to reach each other for\n"
                               "MPI communications.  This means that no Open MPI device has indicated"),
    ("ompi-ofi-call-failed", "Open MPI failed an OFI Libfabric library call (fi_domain).  This is highly\n"
                             "unusual; your job may behave unpredictably (and/or abort) after this."),
    ("ompi-no-slurm-pmi", 'The application appears to have been direct launched using "srun",\n'
                          "but OMPI was not built with SLURM support. This usually happens"),
    ("pmix-version-skew", "[login4:12345] PMIX ERROR: UNPACK-PAST-END in file unpack.c at line 185"),
    ("ucx-no-transport-to-peer", "[1581060992.288391] [daishan:9817 :0]         select.c:438  UCX  ERROR no active "
                                 "messages transport to <no debug data>: posix/memory - Destination is unreachable, "
                                 "sysv/memory - Destination is unreachable"),
    ("ucx-no-transport-to-peer", "[node002:217310] pml_ucx.c:472  Error: Failed to resolve UCX endpoint for rank 0"),
    ("glibc-older-than-bound-library", "/opt/osu/libexec/osu_bw: /lib64/libc.so.6: version `GLIBC_2.34' not found "
                                       "(required by /host/openmpi/lib/libmpi.so.40)"),
    ("ompi-ob1-match-during-init", "[node2:01234] Failing at address: 0xe0\n[node2:01234] [ 1] /opt/mpi/lib/"
                                   "libmpi.so.40(mca_pml_ob1_recv_frag_callback_match+0x7e)[0x7f54e68c1f2e]"),
    # variants and causes of the held-out outputs (tests/doctor/heldout, each file's thread in test_heldout.py)
    ("prrte-oob-unexpected-peer", "[r33c1t6n2:1269599] [prterun-r33c1t5n1-1702153@0,5] tcp_peer_recv_connect_ack: "
                                  "received unexpected process identifier [prterun-r33c1t5n1-1702153@0,5] from "
                                  "[prterun-r33c1t5n1-1702153@0,0]"),
    ("ompi-tcp-peer-of-another-job", "[er-head][[56247,2],5][btl_tcp_endpoint.c:668:mca_btl_tcp_endpoint_recv_"
                                     "connect_ack] received unexpected process identifier: got [[56247,2],0] "
                                     "expected [[56247,1],0]"),
    ("ompi-component-not-found", "A requested component was not found, or was unable to be opened.  This\nmeans that "
                                 "this component is either not installed or is unable to be\nused on your system\n\n"
                                 "Host:      node001\nFramework: pml\nComponent: ucx"),
    ("ompi-component-not-found", "We were unable to find any usable plugins for the BFROPS framework. This PMIx"),
    ("ompi-component-not-found", "No components were able to be opened in the pml framework."),
    ("ucx-transports-unavailable", "[1705555968.594314] [c204-009:189455:0]     ucp_context.c:1081 UCX  WARN  "
                                   "transports 'knem','dc_x','rc' are not available, please use one or more of: mm, "
                                   "posix, self, shm, sm, sysv, tcp"),
    ("ompi-shmem-file-not-created", "[host:45163] shmem: mmap: an error occurred while determining whether or not "
                                    "/tmp/ompi.yv.1001/jf.0/3074883584/sm_segment.yv.1001.b7470000.0 could be "
                                    "created."),
    ("ompi-shmem-file-not-created", "[nid200472:383798] create_and_attach: unable to create shared memory BTL "
                                    "coordinating structure :: size 134217728"),
    ("ompi-shmem-file-not-created", "[nid200305:346908] WARNING: opal_path_df failure!"),
    ("pmix-server-unreachable", "[nid200247:2144171] OPAL ERROR: Unreachable in file ext3x_client.c at line 111"),
    ("pmix-server-unreachable", "[host] PMIX ERROR: PMIX TEMPORARILY UNAVAILABLE in file ptl_tcp.c at line 688\n"
                                "[host] OPAL ERROR: Unreachable in file pmix2x_client.c at line 112"),
    ("pmix-version-skew", "[nid200472:383789] PMIX ERROR: UNPACK-INADEQUATE-SPACE in file base/gds_base_fns.c at line "
                          "268"),
    ("ompi-component-not-loaded", "[capeta:97965] mca_base_component_repository_open: unable to open mca_mpool_grdma: "
                                  "/usr/local/lib/openmpi/mca_mpool_grdma.so: Undefined symbol "
                                  "\"mca_mpool_base_page_size\" (ignored)"),
    ("ucx-mm-connect-failed", "[1662593980.908446] [pg0-4:25595:0]  mm_posix.c:207  UCX  ERROR   open(file_name="
                              "/proc/25599/fd/35 flags=0x0) failed: No such file or directory"),
    ("nccl-shm-too-small", "Last error:\nError while creating shared memory segment /dev/shm/nccl-pZafXL (size "
                           "7340384)"),
    ("ompi-no-slurm-pmi", 'The application appears to have been direct launched using "srun",\n'
                          "but OMPI was not built with SLURM support. This usually happens\n"
                          "when OMPI was not configured --with-slurm and we weren't able"),
    ("nccl-shm-cuda-failure", "[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'"),
    ("slurm-pmix-plugin-not-loaded", "srun: error:  mpi/pmix_v5: init: (null) [0]: mpi_pmix.c:193: pmi/pmix: can not "
                                     "load PMIx library"),
    ("slurm-oom-kill", "slurmstepd: error: Detected 88 oom_kill events in StepId=1103245.batch. Some of the step tasks "
                       "have been OOM Killed."),
    ("slurm-oom-kill", "srun: error: udc-ba26-19: task 0: Out Of Memory"),
    ("pmix-gds-dstore", "[hpc9:158826] PMIX ERROR: PMIX_ERR_FILE_OPEN_FAILURE in file ../../../../../src/mca/gds/"
                        "shmem2/gds_shmem2.c at line 1056"),
    ("pmix-gds-dstore", "[lxbk0609:07143] PMIX ERROR: ERROR in file gds_dstore.c at line 1244"),
    ("psm3-no-nic", "28463ef361be:rank0: PSM3 can't open nic unit: 0 (err=23)"),
    ("bus-error", "Process id 3257 Caught SIGBUS at 0x7efbb4f62000 nonexistent physical address"),
    ("openib-no-active-ports", "[cuda-24-0.local:08642] 2 more processes have sent help message "
                               "help-mpi-btl-openib.txt / no active ports found"),
    # launch failures, each in the wordings of other versions than its held-out file's (tests/doctor/heldout/launch)
    ("ompi-not-enough-slots", "There are not enough slots available in the system to satisfy the 4\nslots that "
                              "were requested by the application:"),
    ("ompi-not-enough-slots", "There are not enough slots available in the system to satisfy the 8 slots\n"
                              "that were requested by the application:"),
    ("ompi-not-enough-slots", "[n1:4410] 1 more process has sent help message help-prte-rmaps-base.txt / "
                              "prte-rmaps-base:alloc-error"),
    ("slurmd-unreachable-at-launch", "srun: error: slurm_receive_msgs: [[ubuntu4]:6818] failed: Socket timed out on "
                                     "send/recv operation"),
    ("slurmd-unreachable-at-launch", "srun: error: Task launch for 34.0 failed on node ubuntu4: Socket timed out on "
                                     "send/recv operation"),
    ("slurmd-unreachable-at-launch", "srun: error: slurm_receive_msgs: Socket timed out on send/recv operation"),
    ("slurmd-unreachable-at-launch", "srun: error: Application launch failed: Communication connection failure"),
    ("slurmd-unreachable-at-launch", "srun: error: Task launch for StepId=7.0 failed on node c3: Protocol "
                                     "authentication error"),
    ("ssh-openssl-mismatch", "OpenSSL version mismatch. Built against 1000105f, you have 10001060"),
    ("ompi-no-ssh-agent", 'The value of the MCA parameter "plm_rsh_agent" was set to a path\nthat could not be '
                          "found:\n\n  plm_rsh_agent: ssh : rsh"),
    ("ompi-no-ssh-agent", 'The value of the MCA parameter "plm_ssh_agent" was set to a path\nthat could not be '
                          "found:\n\n  plm_ssh_agent: ssh : rsh"),
    ("ssh-host-key-verification", "Host key verification failed."),
    ("verbs-locked-memory-limit", "[1736959004.001121] [bernie:29714:0]  ib_iface.c:1060 UCX  ERROR ibv_create_cq("
                                  "cqe=4096) failed: Cannot allocate memory : Please set max locked memory (ulimit -l) "
                                  "to 'unlimited' (current: 64 kbytes)"),
    ("verbs-locked-memory-limit", "[1653660.705652] [magi175:640743:0] ib_md.c:287 UCX ERROR ibv_reg_mr(address="
                                  "0x15213b956010, length=65536, access=0xf) failed: Cannot allocate memory : Please "
                                  "set max locked memory (ulimit -l) to 'unlimited' (current: 524288 kbytes)"),
    ("verbs-locked-memory-limit", "machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed"),
    ("verbs-locked-memory-limit", "The OpenFabrics (openib) BTL failed to initialize while trying to\nallocate some "
                                  "locked memory.  This typically can indicate that the\nmemlock limits are set too "
                                  "low."),
    ("verbs-locked-memory-limit", "gpu1:77:91 [0] NCCL INFO NET/IB : Call to ibv_create_qp failed with error "
                                  "Cannot allocate memory"),
    ("sysv-shm-limit", "[1579192987.880374] [h:440443:0]  sys.c:619  UCX  ERROR shmget(size=4263936 flags=0x7b0) for "
                       "mm_recv_desc failed: No space left on device, please check shared memory limits by 'ipcs -l'"),
    ("sysv-shm-limit", "[1513201433.156702] [h:5332 :0]  sys.c:482  UCX  ERROR shmget failed: No space left on "
                       "device. (size=1069056). The max number of shared memory segments in the system is = 4096."),
    ("every-rank-alone", "MPI_Send(100): Invalid rank has value 1 but must be nonnegative and less than 1"),
    ("every-rank-alone", "PMPI_Isend(156): Invalid rank has value 3 but must be nonnegative and less than 1"),
    ("ompi-version-differs", "[n1:11394] [[56032,0],0] tcp_peer_recv_connect_ack: received different version from "
                             "[[56032,1],0]: 1.8.3 instead of 1.8.4"),
    ("ompi-version-differs", "usock_peer_recv_connect_ack: received different version from [[63455,1],14]: 2.1.1 "
                             "instead of 2.1.6"),
    ("ompi-version-differs", "usock_peer_recv_connect_ack: received different version from server: 2.0.1 instead of "
                             "2.1.0"),
    ("cray-pmi-alps-probe", "Mon Apr  9 19:34:23 2018: [unset]:_pmi_alps_get_apid:alps response not OKAY\n"
                            "Mon Apr  9 19:34:23 2018: [unset]:_pmi_init:_pmi_alps_init returned -1"),
    ("cray-pmi-alps-probe", "0: Fri Jul 21 10:24:49 2017: [unset]:_pmi_alps_get_apid:alps_app_lli_put_request "
                            "failed"),
]


@pytest.mark.parametrize("expected, message", MESSAGES, ids=[f"{i}-{m[0]}" for i, m in enumerate(MESSAGES)])
def test_each_message_is_explained_by_its_signature(expected, message):
    hits = {hit.signature.id: hit for hit in match(message)}
    assert expected in hits, f"{expected} missed: {sorted(hits)}"
    assert hits[expected].line and hits[expected].signature.fix and hits[expected].signature.source


def test_every_signature_is_exercised_and_cites_a_public_source():
    bank = load_bank()
    assert {signature.id for signature in bank} == {expected for expected, _ in MESSAGES}
    for signature in bank:
        assert "http" in signature.source, signature.id


def test_errno_1_and_errno_14_are_told_apart():
    assert {hit.signature.id for hit in match("Read -1, expected 4096, errno = 14")} == {"not-cuda-aware"}
    assert {hit.signature.id for hit in match("Read -1, expected 4096, errno = 1")} == {"cma-read-eperm"}


@pytest.mark.parametrize("message, expected, not_claimed", [
    # the daemons' out-of-band TCP, not the ranks' BTL: its fix is another setting
    ("[n2:1269599] [prterun-n1-1702153@0,5] tcp_peer_recv_connect_ack: received unexpected process identifier "
     "[prterun-n1-1702153@0,5] from [prterun-n1-1702153@0,0]", "prrte-oob-unexpected-peer", "ompi-tcp-unexpected-peer"),
    # a spawned job's rank taken for the parent's: not a question of interfaces
    ("[h][[56247,2],5][btl_tcp_endpoint.c:668:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier: got [[56247,2],0] expected [[56247,1],0]", "ompi-tcp-peer-of-another-job", "ompi-tcp-unexpected-peer"),
    # the same job on both sides: the interfaces
    ("[h][[56247,1],5][btl_tcp_endpoint.c:668:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier: got [[56247,1],0] expected [[56247,1],3]", "ompi-tcp-unexpected-peer", "ompi-tcp-peer-of-another-job"),
    # an unpack failure reported from the data store's file is a version skew, not a lock of the data store
    ("[nid2:3837] PMIX ERROR: UNPACK-INADEQUATE-SPACE in file dstore_base.c at line 2624", "pmix-version-skew",
     "pmix-gds-dstore"),
    # transports that are missing, with others left: no claim that UCX found none
    ("UCX  WARN  transports 'knem','rc' are not available, please use one or more of: posix, sysv, tcp",
     "ucx-transports-unavailable", "ucx-tls-empty"),
    # NCCL's segment that failed in a CUDA call: not /dev/shm's size, though the next line is the same
    ("[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'\n[1] misc/shmutils.cc:114 NCCL WARN Error "
     "while creating shared memory segment /dev/shm/nccl-NzwJ7O (size 9637888)", "nccl-shm-cuda-failure",
     "nccl-shm-too-small"),
    # usnic is asked on every machine and answers -61 on all but Cisco's: no fabric is blamed
    ("libfabric:1213328:core:core:fi_getinfo_():955<warn> fi_getinfo: provider usnic returned -61 (No data "
     "available)", None, "fi-getinfo-nodata"),
    # PMIx's security framework keeps its own advice
    ("A requested component was not found, or was unable to be opened. Host: n1 Framework: psec Component: munge",
     "pmix-psec", "ompi-component-not-found"),
    # srun refused by slurmd for another reason than reaching it: CPU binding is the job's, not the node's
    ("srun: error: Task launch for StepId=7993406.0 failed on node pool0-00509: Unable to satisfy cpu bind request",
     None, "slurmd-unreachable-at-launch"),
    # slurmctld (not slurmd) out of reach: a query, not a launch
    ("slurm_load_jobs error: Socket timed out on send/recv operation", None, "slurmd-unreachable-at-launch"),
    # ompi_info listing the agent's value is not the failure
    ('MCA plm rsh: parameter "plm_rsh_agent" (current value: "ssh : rsh", data source: default, level: 2)', None,
     "ompi-no-ssh-agent"),
    # ssh refusing a key is not an unknown host key
    ("user@n2: Permission denied (publickey).", None, "ssh-host-key-verification"),
    # a queue pair refused for another reason than pinned memory
    ("NET/IB : Call to ibv_create_qp failed with error Invalid argument", None, "verbs-locked-memory-limit"),
    # /dev/shm full (posix_fallocate) is not a System V limit
    ("include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device", "nccl-shm-too-small",
     "sysv-shm-limit"),
    # a rank past a communicator of four is the program's error, not ranks alone
    ("MPI_Send(100): Invalid rank has value 4 but must be nonnegative and less than 4", None, "every-rank-alone"),
    ("MPI_Send(100): Invalid rank has value 12 but must be nonnegative and less than 12", None, "every-rank-alone"),
    # the same peer of another job is not another version
    ("[h][[56247,1],5][btl_tcp_endpoint.c:668:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier: got [[56247,1],0] expected [[56247,1],3]", "ompi-tcp-unexpected-peer", "ompi-version-differs"),
    # a slot count in a resource manager's own words is not Open MPI's refusal
    ("sbatch: error: Batch job submission failed: Requested node configuration is not available", None,
     "ompi-not-enough-slots"),
])
def test_a_message_is_told_from_its_look_alike(message, expected, not_claimed):
    found = {hit.signature.id for hit in match(message)}
    assert (expected is None or expected in found) and not_claimed not in found, found


def test_pmix_psec_is_a_problem_when_its_framework_failed_to_open_and_no_component_is_blamed():
    # PMIx's two help texts of open-mpi/ompi issue 9582, read as one output
    found = {hit.signature.id: hit.verdict for hit in match(
        "A requested component was not found, or was unable to be opened. Host: cnode9 Framework: psec Component: "
        "munge\nIt looks like pmix_init failed for some reason; ... pmix_psec_base_open failed --> Returned value "
        "-46 instead of PMIX_SUCCESS")}
    assert found == {"pmix-psec": "problem"}
    assert {hit.verdict for hit in match("Framework: psec\nComponent: munge")} == {"warning"}


def test_an_ordinary_output_matches_nothing():
    assert match("# OSU MPI Latency Test v7.5\n# Size Latency (us)\n1 0.21\n") == []
    assert match(None) == []


def test_a_malformed_bank_names_the_file_entry_and_field(tmp_path):
    path = tmp_path / "bank.toml"
    path.write_text('[[signature]]\nid = "x"\nverdict = "problem"\npattern = "a"\nmeaning = "m"\nfix = "f"\n')
    with pytest.raises(SignatureError, match=r"bank\.toml: \[\[signature\]\] #1: field 'source' missing"):
        load_bank(path)
    path.write_text('[[signature]]\nid = "x"\nverdict = "fatal"\npattern = "a"\nmeaning = "m"\nfix = "f"\nsource = "s"\n')
    with pytest.raises(SignatureError, match="verdict 'fatal', expected warning or problem"):
        load_bank(path)
    path.write_text('[[signature]]\nid = "x"\nverdict = "problem"\npattern = "(a"\nmeaning = "m"\nfix = "f"\nsource = "s"\n')
    with pytest.raises(SignatureError, match="pattern is not a regular expression"):
        load_bank(path)
    path.write_text('[[signature]]\nid = "x"\nverdict = "problem"\npattern = "a"\nunless = "(b"\nmeaning = "m"\n'
                    'fix = "f"\nsource = "s"\n')
    with pytest.raises(SignatureError, match="unless is not a regular expression"):
        load_bank(path)
    path.write_text('[[signature]]\nid = "x"\nverdict = "problem"\npattern = "a"\nunless = " "\nmeaning = "m"\n'
                    'fix = "f"\nsource = "s"\n')
    with pytest.raises(SignatureError, match="field 'unless' empty"):
        load_bank(path)


def test_the_line_shown_drops_open_mpis_prefix_and_keeps_the_peers_names():
    line = ("[er-head][[56247,2],5][btl_tcp_endpoint.c:668:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected "
            "process identifier: got [[56247,2],0] expected [[56247,1],0]")
    (hit,) = match(line)
    assert hit.line == "received unexpected process identifier: got [[56247,2],0] expected [[56247,1],0]"


# Open MPI's help texts, printed between lines of dashes (the others are printed on lines of their own)
HELP_TEXTS = {"cma-permission-denied", "shm-target-full", "pmix-psec", "ompi-no-slurm-pmi", "ompi-tcp-unexpected-peer",
              "ompi-no-fabric-interface", "ompi-unreachable-peers", "ompi-component-not-found",
              "ompi-not-enough-slots", "ompi-no-ssh-agent", "verbs-locked-memory-limit"}


@pytest.mark.parametrize("expected, message", MESSAGES, ids=[f"{i}-{m[0]}" for i, m in enumerate(MESSAGES)])
def test_each_message_survives_the_reading_of_an_output(expected, message):
    """What `doctor FILE` and `ingest` keep of an output (lines that read like messages, help frames whole) still
    carries each known message: a message the reading drops could never be recognised."""
    from mpistack.parsers.launcher_messages import MessageLines

    lines = message.splitlines()
    if expected in HELP_TEXTS and "help message" not in message:
        lines = ["-" * 74, *lines, "-" * 74]
    kept = MessageLines()
    for line in lines:
        kept.feed(line + "\n")
    found = {hit.signature.id for hit in match("\n".join(kept.close().messages))}
    assert expected in found

