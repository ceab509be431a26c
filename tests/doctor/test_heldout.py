"""`mpistack doctor FILE` on outputs users posted in public threads that the signatures were not written from
(tests/doctor/heldout: each file written from the thread named beside it, hosts, paths and pids as there or
changed, the launcher's and libraries' noise kept): the cause named, and nothing claimed that the thread
contradicts; an MPI library's generic abort banner left out only where a known problem says why; the same
findings after `mpistack ingest` and `doctor --run N`; a Slingshot system's file at TCP class read --like a
shipped reference; every line of the terminal output within 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from mpistack.doctor.files import diagnose_file, read_file, unrecognised
from tests.helpers import MPISTACK, plain_environment

HELD_OUT = Path(__file__).with_name("heldout")

# file: (its public source, the findings (rule, title) it must give and no other, the lines it must list as
# unrecognised and no other)
CASES = {
    # ranks in different user namespaces: UCX's posix proc link, then the FIFO; Open MPI's MPI_Init banner below
    "ucx_proc_link_apptainer.out": (
        "https://github.com/openucx/ucx/pull/9213",
        {("run-signatures", "ucx-posix-proc-link-denied"), ("run-signatures", "ucx-mm-connect-failed")}, []),
    # the peer's /proc link gone (not refused): the FIFO failure, no claim of namespaces
    "ucx_proc_link_gone_hpl.out": (
        "https://github.com/openucx/ucx/issues/8511", {("run-signatures", "ucx-mm-connect-failed")}, []),
    # PMIx version skew, with PMIx's long source paths, above a latency table that still ran
    "pmix_skew_unpack_inadequate.out": (
        "https://github.com/openpmix/openpmix/issues/2948", {("run-signatures", "pmix-version-skew")}, []),
    # podman-hpc: the skew's unpack errors (one from the data store's file) and Open MPI's shared-memory file
    "podman_hpc_pmix_dstore.out": (
        "https://github.com/open-mpi/ompi/issues/12146",
        {("run-signatures", "pmix-version-skew"), ("run-signatures", "ompi-shmem-file-not-created"),
         ("output-ended", "the test did not finish")}, []),
    # the gds ds12 lock, one copy glued to the program's own output
    "pmix_ds12_lock_interleaved.out": (
        "https://github.com/openpmix/openpmix/issues/1716",
        {("run-signatures", "pmix-gds-ds12"), ("output-ended", "the test did not finish")}, []),
    # the TCP BTL meeting foreign interfaces (AWS EFA nodes), cut by Slurm's time limit
    "ompi_tcp_unexpected_efa.out": (
        "https://github.com/open-mpi/ompi/issues/9858", {("run-signatures", "ompi-tcp-unexpected-peer")},
        ["slurmstepd: error: *** JOB 4121 ON c-96-4-worker0001 CANCELLED AT 2021-12-20T09:14:02 DUE TO TIME LIMIT"
         " ***"]),
    # the same words from PRRTE's daemons: their own interface setting, not the BTL's
    "prrte_oob_unexpected.out": (
        "https://github.com/openpmix/prrte/issues/1389", {("run-signatures", "prrte-oob-unexpected-peer")}, []),
    # a spawned job's rank: a defect, not interfaces
    "ompi_tcp_unexpected_spawn.out": (
        "https://github.com/open-mpi/ompi/issues/12115", {("run-signatures", "ompi-tcp-peer-of-another-job")}, []),
    # components that cannot load: PMIx's, by undefined symbols, then the framework left empty
    "pmix_component_undefined_symbol.out": (
        "https://github.com/open-mpi/ompi/issues/5782",
        {("run-signatures", "ompi-component-not-loaded"), ("run-signatures", "ompi-component-not-found")}, []),
    # FreeBSD's loader says 'Undefined symbol "..."'; the test still ran
    "ompi_component_freebsd_undefined.out": (
        "https://github.com/open-mpi/ompi/issues/3479", {("run-signatures", "ompi-component-not-loaded")}, []),
    # osu_bw asked for pml ucx that the installation cannot open, under the openib frame and MPI_INIT's
    "ucx_pml_component_not_found_osu.out": (
        "https://github.com/openucx/ucx/issues/8440", {("run-signatures", "ompi-component-not-found")}, []),
    # an ABI mismatch seen as a symbol lookup error, inside a test runner's output
    "python_symbol_lookup_mca.out": (
        "https://github.com/BhallaLab/moose-core/issues/31", {("run-signatures", "abi-undefined-symbol")},
        ["2/5 Test #2: pymoose-test-synchan .............***Failed    0.10 sec"]),
    # Open MPI 4 under srun without Slurm's PMI: srun --label's '0: ' on every line of the frame
    "ompi_no_slurm_pmi_labelled.out": (
        "https://github.com/clusterinthecloud/ansible/issues/24", {("run-signatures", "ompi-no-slurm-pmi")}, []),
    # the same after PMI2_Init failed, with an unrelated srun complaint that stays listed
    "ompi_no_slurm_pmi_pmi2.out": (
        "https://github.com/ArjunaCluster/ArjunaUsers/issues/172",
        {("run-signatures", "ompi-no-slurm-pmi"), ("run-signatures", "pmi2-init-failed")},
        ["srun: error: spank: x11.so: Plugin file not found"]),
    # srun --mpi=pmix into podman-hpc: the PMIx server unreachable from the container, which Open MPI reports as
    # 'not built with SLURM's PMI support'; newer Slurm's 'Job N step creation temporarily disabled'
    "podman_hpc_srun_pmix_unreachable.out": (
        "https://github.com/open-mpi/ompi/issues/12146",
        {("run-signatures", "pmix-server-unreachable"), ("run-signatures", "ompi-no-slurm-pmi"),
         ("run-signatures", "step-creation-disabled")}, []),
    # the other wording Open MPI prints ('not built with SLURM support'), as the TensorRT-LLM guide quotes it
    "ompi_srun_no_slurm_support.out": (
        "https://nvidia.github.io/TensorRT-LLM/installation/linux.html",
        {("run-signatures", "ompi-no-slurm-pmi")}, []),
    # /dev/shm too small: NCCL under Kubeflow, and NCCL's words relayed by PyTorch ('Last error:')
    "nccl_shm_kubeflow.out": (
        "https://github.com/NVIDIA/nccl/issues/525", {("run-signatures", "nccl-shm-too-small")}, []),
    "nccl_shm_torch_last_error.out": (
        "https://github.com/fal-ai-community/video-diffusion-speedrun/issues/2",
        {("run-signatures", "nccl-shm-too-small")}, []),
    # MPICH over UCX in a Kubernetes pod's 24 MB /dev/shm: MPICH's error stack around UCX's status
    "mpich_ucx_shm_kubernetes.out": (
        "https://github.com/pmodels/mpich/issues/7321", {("run-signatures", "ucx-worker-no-resource")}, []),
    # Open MPI's shared-memory backing file that could not be created, above a table that ran
    "ompi_shmem_mmap_not_created.out": (
        "https://github.com/open-mpi/ompi/issues/12784", {("run-signatures", "ompi-shmem-file-not-created")}, []),
    # missing fabric providers: MPICH's fi_getinfo with -61, and its later wording 'failure'
    "mpich_ofi_getinfo_nodata.out": (
        "https://github.com/pmodels/mpich/issues/6336", {("run-signatures", "mpich-find-provider")}, []),
    "mpich_ofi_getinfo_failure_singleton.out": (
        "https://github.com/pmodels/mpich/issues/6612", {("run-signatures", "mpich-find-provider")},
        ["Error: Process completed with exit code 143."]),
    # libfabric's efa provider with no device it may open (a Kubernetes pod's device cgroup); the shell's echo of
    # the command (FI_LOG_LEVEL=warn) is not a message
    "libfabric_efa_k8s_device_cgroup.out": (
        "https://github.com/ofiwg/libfabric/issues/12708",
        {("run-signatures", "fi-getinfo-nodata"), ("output-ended", "the test did not finish")},
        ["libfabric:2211:1788291020::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device failed! errno: 2",
         "libfabric:2211:1788291020::efa:fabric:efa_device_list_initialize():302<warn> efa_device_construct_gid failed "
         "for device_idx 0, err=-2"]),
    # -61 from a utility provider (ofi_mrail) says nothing of the fabric: no provider finding; the failure's own
    # lines stay listed
    "libfabric_mrail_noise_efa_rma.out": (
        "https://github.com/aws/libfabric/issues/3", {("output-ended", "the test did not finish")},
        ["libfabric:72089:ofi_mrail:fabric:mrail_get_core_info():277<warn> OFI_MRAIL_ADDR_STRC env variable not set!",
         "libfabric:72089:core:core:fi_getinfo_():889<warn> fi_getinfo: provider ofi_mrail returned -61 (No data "
         "available)",
         '[22:31:52] ./include/dmlc/logging.h:276: [22:31:52] src/./fabric_rma_van.h:659: Check failed: strcmp('
         'ofi_provider_->fabric_attr->prov_name, "efa") == 0 couldn\'t get EFA as provider',
         "terminate called after throwing an instance of 'dmlc::Error'"]),
    # UCX with no transport left, after the transports it was asked for were missing
    "ucx_no_usable_transports.out": (
        "https://github.com/openucx/ucx/issues/9610",
        {("run-signatures", "ucx-tls-empty"), ("run-signatures", "ucx-transports-unavailable")}, []),
    # an OSU table among srun's queueing notes: read, nothing claimed
    "osu_allreduce_srun_noise.out": ("https://github.com/apptainer/apptainer/issues/1227", set(), []),
    # a failure no signature explains: MPICH's whole error stack stays listed, its banner included
    "mpich_ucx_shared_memory_sandbox.out": (
        "https://github.com/NVIDIA/OpenShell/issues/3019", {("output-ended", "the test did not finish")},
        ["Abort(404899215): Fatal error in internal_Init_thread: Other MPI error, error stack:",
         "internal_Init_thread(71).: MPI_Init_thread(argc=(nil), argv=(nil), required=3, provided=0x7ffda19f22f8) "
         "failed",
         "MPIDI_UCX_init_worker(86):  ucx function returned with failed status(ucx_init.c 86 MPIDI_UCX_init_worker "
         "Shared memory error)"]),
    # lines as users paste them: UCX's proc-link refusal (openucx/ucx issue 4224) and a component that cannot load
    # (BirolLab/abyss issue 175) wrapped at a terminal's width, PMIx's skew behind a log collector's timestamp and
    # mpirun --tag-output's label: each known across its two lines, none left unrecognised
    "wrapped_and_prefixed.out": (
        "https://github.com/openucx/ucx/issues/4224; https://github.com/BirolLab/abyss/issues/175",
        {("run-signatures", "ucx-posix-proc-link-denied"), ("run-signatures", "pmix-version-skew"),
         ("run-signatures", "ompi-component-not-loaded")}, []),
    # a Slingshot system's inter-node bandwidth at TCP class (CSCS's MPICH image without the CXI hook)
    "slingshot_osu_bw_tcp_class.out": (
        "https://docs.cscs.ch/software/container-engine/resource-hook/", set(),
        ["srun: warning: can't honor --ntasks-per-node set to 1 which doesn't match the requested tasks 2 with the "
         "number of requested nodes 2. Ignoring --ntasks-per-node."]),
    # a second round, from other threads
    # PMIx's psec framework without munge under pyxis, the help texts pasted without their dashes (blank lines
    # between their parts): each text read whole, PMIx's advice alone, a problem as pmix_psec_base_open failed
    # follows; the server's NOT-FOUND that follows stays listed
    "pyxis_psec_munge_hpl.out": (
        "https://github.com/NVIDIA/pyxis/issues/88", {("run-signatures", "pmix-psec")},
        ["[pgp0202:12255] PMIX ERROR: NOT-FOUND in file server/pmix_server.c at line 229"]),
    # the same under srun --container-name with Open MPI 5, framed and preceded by the shell's echo of the command
    "pyxis_psec_munge_ompi5.out": (
        "https://github.com/NVIDIA/pyxis/issues/139", {("run-signatures", "pmix-psec")}, []),
    # srun's own PMIx plug-in without its library: Slurm's side, srun's generic words after it not listed
    "srun_pmix_plugin_cannot_load.out": (
        "https://github.com/pyiron/executorlib/pull/761", {("run-signatures", "slurm-pmix-plugin-not-loaded")}, []),
    # the TCP BTL's other wording, a connection from an unexpected IP address (the frame's host and address
    # details after its sentences left out)
    "ompi_tcp_unexpected_address.out": (
        "https://github.com/open-mpi/ompi/issues/3035", {("run-signatures", "ompi-tcp-unexpected-peer")}, []),
    # the C++ bindings of another Open MPI than the one the program was built with
    "ompi_cxx_symbol_lookup.out": (
        "https://github.com/sanshar/Block/issues/45", {("run-signatures", "abi-undefined-symbol")}, []),
    # the btl ofi component asked for on AWS EFA nodes and not there, with mpirun's daemon verbosity
    "ompi_btl_ofi_not_found_efa.out": (
        "https://github.com/open-mpi/ompi/issues/6795", {("run-signatures", "ompi-component-not-found")}, []),
    # vader's CMA refused in a Docker container without CAP_SYS_PTRACE: errno 1 only
    "vader_cma_read_errno_docker.out": (
        "https://github.com/radiasoft/devops/issues/132",
        {("run-signatures", "cma-read-eperm"), ("single-copy", "single-copy: refused (recorded), confinement not "
                                                               "recorded")}, []),
    # restrictive ptrace settings (WSL) and OSHMEM's UCX finding no RMA transport: the second is not claimed
    "ompi_cma_ptrace_ucx_wsl.out": (
        "https://github.com/open-mpi/ompi/issues/4390",
        {("run-signatures", "cma-permission-denied"), ("output-ended", "the test did not finish"),
         ("single-copy", "single-copy: refused (recorded), confinement not recorded")},
        ["[1528554886.680507] [DESKTOP-9J4RLOC:95   :0]         select.c:312  UCX  ERROR no remote registered memory "
         "access transport to <no debug data>: self/self - Destination is unreachable, tcp/eth1 - no put short, "
         "tcp/wifi0 - no put short, mm/sysv - Destination is unreachable, mm/posix - Destination is unreachable"]),
    # NCCL's /dev/shm full in a CI pod, behind a log collector's timestamps, with its return-code trail
    "nccl_shm_extend_ci_timestamps.out": (
        "https://github.com/pytorch/ci-infra/pull/490", {("run-signatures", "nccl-shm-too-small")}, []),
    # NCCL's segment failing in a CUDA call with a 64 MB /dev/shm that had room: not /dev/shm's size
    "nccl_shm_cuda_invalid_argument.out": (
        "https://github.com/NVIDIA/nccl/issues/1518", {("run-signatures", "nccl-shm-cuda-failure")}, []),
    # a slurm-N.out: mpirun's abort, Slurm's oom_kill, the site's epilogue (billing, wallclock); the epilogue's own
    # sentence is not a message the doctor knows
    "slurm_oom_epilogue_chombo.out": (
        "https://github.com/chombo-discharge/chombo-discharge/issues/501", {("run-signatures", "slurm-oom-kill")},
        ["Job had an out of memory error."]),
    # openib without an active port, then the job's memory limit and Slurm's cancellation
    "slurm_openib_memlimit_cancelled.out": (
        "https://github.com/heronsystems/adeptRL/pull/13",
        {("run-signatures", "openib-no-active-ports"), ("run-signatures", "slurm-oom-kill")}, []),
    # OSU 7.2's device-buffer header with its datatype line, OSU 5.7.1's pairs and message rate, OSU 5.0 behind
    # a job script's banner, OSU 7.0 with a version suffix: read, nothing claimed
    "osu_cuda_bw_v72_eessi.out": ("https://github.com/EESSI/software-layer/pull/716", set(), []),
    "osu_mbw_mr_v571_pcluster.out": ("https://github.com/aws/aws-parallelcluster/pull/7035", set(), []),
    "osu_latency_v50_srun_banner.out": ("https://github.com/ofi-cray/libfabric-cray/pull/859", set(), []),
    "osu_latency_v70_suffix_sm2.out": ("https://github.com/ofiwg/libfabric/pull/8680", set(), []),
    # a crash in vader under an ABI wrapper: no cause claimed, the signal and the named frames listed
    "osu_cas_v70_vader_segv.out": (
        "https://github.com/jeffhammond/mukautuva/issues/2", {("output-ended", "the test did not finish")},
        ["[nuclear:83579] Signal: Segmentation fault (11)", "[nuclear:83579] Failing at address: 0x7f35b2bf8008",
         "[nuclear:83579] [ 2] /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so("
         "mca_btl_vader_poll_handle_frag+0x95)[0x7f7cfa6fbae5]",
         "[nuclear:83579] [ 4] /lib/x86_64-linux-gnu/libopen-pal.so.40(opal_progress+0x34)[0x7f7d01195714]",
         "[nuclear:83579] [ 5] /usr/lib/x86_64-linux-gnu/libmpi.so(ompi_request_default_wait+0x55)[0x7f7d0132c0e5]",
         "[nuclear:83579] [ 6] /usr/lib/x86_64-linux-gnu/libmpi.so(ompi_coll_base_barrier_intra_recursivedoubling"
         "+0xe3)[0x7f7d01387d13]",
         "[nuclear:83579] [ 7] /usr/lib/x86_64-linux-gnu/libmpi.so(MPI_Barrier+0xb2)[0x7f7d01340482]",
         "[nuclear:83579] [ 8] /home/jhammond/mukautuva/ompi-wrap.so(WRAP_Barrier+0x14)[0x7f7cf9c178d4]"]),
    # FI_LOG_LEVEL=trace on an Omni-Path cluster running the sockets provider: usnic's -61 (Cisco's adapters only)
    # blames no fabric, like the utility providers'
    "ofi_psm2_getinfo_utility_noise.out": (
        "https://github.com/cornelisnetworks/opa-psm2/issues/60", {("output-ended", "the test did not finish")},
        ["libfabric:1213328:core:core:fi_getinfo_():955<warn> fi_getinfo: provider usnic returned -61 (No data "
         "available)",
         "libfabric:1213328:core:core:fi_getinfo_():955<warn> fi_getinfo: provider ofi_rxm returned -61 (No data "
         "available)",
         "libfabric:1213328:core:core:fi_getinfo_():955<warn> fi_getinfo: provider ofi_rxd returned -61 (No data "
         "available)",
         "libfabric:1213328:ofi_mrail:fabric:mrail_get_core_info():289<warn> OFI_MRAIL_ADDR_STRC env variable not set!",
         "libfabric:1213328:core:core:fi_getinfo_():955<warn> fi_getinfo: provider ofi_mrail returned -61 (No data "
         "available)"]),
    # failures no signature explains: MPICH's whole stacks stay listed, their last line (the one that says most,
    # 'invalid host/port description', 'Invalid argument') included
    "mpich_singularity_business_card.out": (
        "https://github.com/apptainer/singularity/issues/713", {("output-ended", "the test did not finish")},
        ["Fatal error in MPI_Init: Other MPI error, error stack:",
         "MPIR_Init_thread(805)...................: fail failed",
         "MPID_Init(1831).........................: channel initialization failed",
         "MPIDI_CH3_Init(147).....................: fail failed",
         "MPID_nem_tcp_post_init(645).............: fail failed",
         "MPID_nem_tcp_connect(1122)..............: fail failed",
         "MPID_nem_tcp_get_addr_port_from_bc(1346): Missing ifname or invalid host/port description in business card"]),
    "mpich_ofi_fabric_no_network.out": (
        "https://github.com/pmodels/mpich/issues/6547", {("output-ended", "the test did not finish")},
        ["Abort(337237391): Fatal error in internal_Init_thread: Other MPI error, error stack:",
         "internal_Init_thread(67).: MPI_Init_thread(argc=0x7ffee0cd3980, argv=0x7ffee0cd3988, required=0, "
         "provided=0x7ffee0cd3984) failed",
         "MPIDI_OFI_init_local(580): OFI fi_fabric failed (ofi_init.c:580:MPIDI_OFI_init_local:Invalid argument)"]),
    # PSM3 (Fedora's libfabric) with no NIC in a container under MPICH; the build tool's status stays listed
    "mpich_psm3_no_nic_fedora.out": (
        "https://github.com/mpi4py/shmem4py/pull/28", {("run-signatures", "psm3-no-nic")},
        ["create_vni_context(982)..: OFI endpoint open failed (ofi_init.c:982:create_vni_context:Cannot allocate "
         "memory)", "make: *** [makefile:19: test-1] Error 143"]),
    # MPICH's SIGBUS in MPI_Init in a docker container, told by the application's own signal handler
    "mpich_sigbus_docker_vtk.out": (
        "https://github.com/pmodels/mpich/issues/7530", {("run-signatures", "bus-error")},
        ["WARNING: The stack trace will not use advanced capabilities because this is a release build."]),
    # PMIx's UNPACK-PAST-END in the client under mpirun: a skew, a warning, so Open MPI's MPI_Init banner stays listed
    "pmix_unpack_past_end_mpirun.out": (
        "https://github.com/open-mpi/ompi/issues/5535",
        {("run-signatures", "pmix-version-skew"), ("output-ended", "the test did not finish")},
        ["*** An error occurred in MPI_Init", "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,"]),
    # PMIx 2's data store (gds_dstore.c) in Singularity under srun; a NO-PERMISSIONS from Open MPI's bundled PMIx
    # in a Singularity HPL run; PMIx 5's shmem2 under srun (its PMIX_ERR_ wording), a warning: the banner stays listed
    "pmix_gds_dstore_singularity_srun.out": (
        "https://github.com/apptainer/singularity/issues/5195",
        {("run-signatures", "pmix-gds-dstore"), ("output-ended", "the test did not finish")}, []),
    "pmix_dstore_no_permissions_hplmxp.out": (
        "https://github.com/amd/InfinityHub-CI/issues/10",
        {("run-signatures", "pmix-gds-dstore"), ("output-ended", "the test did not finish")}, []),
    "pmix_shmem2_file_open_srun.out": (
        "https://github.com/openpmix/openpmix/issues/3839",
        {("run-signatures", "pmix-gds-dstore"), ("output-ended", "the test did not finish")},
        ["*** An error occurred in MPI_Init", "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,"]),
    # the PMIx server out of reach from ranks in Singularity under Slurm, then Open MPI's MPI_Init_thread banner
    "pmix_unreachable_gchp_singularity.out": (
        "https://github.com/geoschem/GCHP/issues/269", {("run-signatures", "pmix-server-unreachable")}, []),
    # a third round, read blind: PMIx's psec without munge pasted with a blank line under every line, each help
    # text still read whole: PMIx's problem (pmix_psec_base_open failed follows), not a component for Open MPI to
    # drop; the server's NOT-FOUND stays listed
    "ompi_psec_munge_double_spaced.out": (
        "https://github.com/open-mpi/ompi/issues/9582", {("run-signatures", "pmix-psec")},
        ["[cnode9:2708617] PMIX ERROR: NOT-FOUND in file server/pmix_server.c at"]),
    # outputs with no table but a launcher's or a library's complaint: read as a failed output, the complaint
    # named (mpirun's slots, Open MPI versions that differ, Cray PMI's ALPS probing, no ssh) or, where no known
    # message says why (a program's own 'comm size: 1'), listed
    "ompi_not_enough_slots_no_table.out": (
        "https://github.com/h5py/h5py/issues/2627", {("run-signatures", "ompi-not-enough-slots")}, []),
    "charliecloud_ranks_alone_comm_size_1.out": (
        "https://github.com/hpc/charliecloud/issues/367", {("output-ended", "the test did not finish")},
        ["Hello from 0 (comm size: 1)"]),
    "charliecloud_ompi_version_differs.out": (
        "https://github.com/hpc/charliecloud/issues/367", {("run-signatures", "ompi-version-differs")}, []),
    "cray_pmi_alps_warnings.out": (
        "https://github.com/ComputationalRadiationPhysics/picongpu/pull/2581",
        {("output-ended", "the test did not finish"), ("run-signatures", "cray-pmi-alps-probe")}, []),
    "ompi_plm_rsh_agent_no_ssh.out": (
        "https://github.com/EESSI/compatibility-layer/issues/230", {("run-signatures", "ompi-no-ssh-agent")},
        ["[tcn43.local.snellius.surf.nl:99269] [[INVALID],INVALID] FORCE-TERMINATE AT Not found:-13 - error "
         "plm_rsh_component.c(335)"]),
    # an OSU table with no reference named: read, nothing claimed (the command says the figures were not judged)
    "osu_latency_efa_intranode_no_reference.out": ("https://github.com/aws/aws-parallelcluster/issues/1143", set(), []),
}


def test_every_held_out_file_has_its_case():
    assert sorted(CASES) == sorted(path.name for path in HELD_OUT.glob("*.out"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cause_is_named_and_nothing_else_claimed(name):
    _source, findings, left = CASES[name]
    reading = read_file(str(HELD_OUT / name))
    assert {(finding.rule, finding.title) for finding in diagnose_file(reading)} == findings
    assert unrecognised(reading.messages.messages) == left


@pytest.mark.parametrize("name, benchmark, suite, rows, ranks, nodes", [
    ("osu_cuda_bw_v72_eessi.out", "bw", "osu 7.2", 26, 2, None),
    ("osu_mbw_mr_v571_pcluster.out", "mbw_mr", "osu 5.7.1", 12, 96, None),
    # the job script's '### Running: srun -n2 -N2 ...' gives the job's size
    ("osu_latency_v50_srun_banner.out", "latency", "osu 5.0", 24, 2, 2),
    # a build's suffix on the version is still the version, not part of the test's name
    ("osu_latency_v70_suffix_sm2.out", "latency", "osu 7.0-lrbison3", 14, 2, None)])
def test_each_osu_header_style_is_read_whole(name, benchmark, suite, rows, ranks, nodes):
    (run,) = read_file(str(HELD_OUT / name)).runs
    assert (run.benchmark, run.suite, len(run.rows), run.incomplete) == (benchmark, suite, rows, False)
    assert (run.provenance.ranks, run.provenance.nodes) == (ranks, nodes)


def doctor(*args, columns: str = "80", db: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*MPISTACK, *(("--db", str(db)) if db else ()), "doctor", *map(str, args)],
                          capture_output=True, text=True, env={**plain_environment(), "COLUMNS": columns}, timeout=300)


def test_all_at_once_at_80_columns_with_json_fields():
    files = sorted(HELD_OUT.glob("*.out"))
    text = doctor(*files)
    assert text.returncode == 1 and "Traceback" not in text.stderr
    # every line fits, but a word that cannot be broken (a URL, a long path)
    assert [line for line in text.stdout.splitlines() if len(line) > 80 and " " in line.strip()] == []
    document = json.loads(doctor(*files, "--json").stdout)
    assert document["findings"]
    for finding in document["findings"]:
        assert all(finding[key] for key in ("rule", "title", "meaning", "fix", "source")), finding


def _ingested_run(db: Path, path: Path) -> str:
    ingest = subprocess.run([*MPISTACK, "--db", str(db), "ingest", str(path), "-t", "system=x", "-t",
                             "approach=container"], capture_output=True, text=True, env=plain_environment(),
                            timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    return ingest.stderr.split("(run ")[1].split(")")[0]


@pytest.mark.parametrize("name", ["ucx_proc_link_apptainer.out", "ompi_tcp_unexpected_spawn.out",
                                  "mpich_ucx_shm_kubernetes.out", "ompi_component_freebsd_undefined.out",
                                  "ompi_no_slurm_pmi_labelled.out", "nccl_shm_torch_last_error.out",
                                  "mpich_ucx_shared_memory_sandbox.out", "pyxis_psec_munge_hpl.out",
                                  "slurm_oom_epilogue_chombo.out", "nccl_shm_cuda_invalid_argument.out"])
def test_after_ingest_doctor_run_gives_the_same_findings(tmp_path, name):
    path = HELD_OUT / name
    from_file = json.loads(doctor(path, "--json").stdout)
    run = _ingested_run(tmp_path / "s.db", path)
    stored = doctor("--run", run, "--json", db=tmp_path / "s.db")
    key = lambda findings: sorted((f["rule"], f["verdict"], f["title"], f["fix"], f["source"])  # noqa: E731
                                  for f in findings)
    assert key(json.loads(stored.stdout)["findings"]) == key(from_file["findings"])
    assert from_file["findings"]
    shown = doctor("--run", run, db=tmp_path / "s.db", columns="400").stdout
    for line in from_file["files"][0]["unrecognised"]["lines"]:
        assert line in shown


def test_a_slingshot_file_at_tcp_class_is_called_so_with_both_figures():
    result = doctor(HELD_OUT / "slingshot_osu_bw_tcp_class.out", "--like", "ref:alps-gh200-mpich-ce", "--json")
    assert result.returncode == 1
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["rule"] == "like-reference")
    assert finding["title"].startswith("TCP-class bandwidth: 1280 MB/s at 4 MiB against 24008 MB/s")
    assert finding["evidence"]["figure"] == "1280 MB/s at 4 MiB"
    assert finding["evidence"]["reference_figure"].startswith("24008 MB/s at 4 MiB")


def test_a_file_of_messages_without_a_table_is_read_and_its_status_agrees(tmp_path):
    # a launcher's complaint alone is a failed output, not a file refused; the JSON's status is the exit status
    slots = HELD_OUT / "ompi_not_enough_slots_no_table.out"
    text = doctor(slots)
    assert text.returncode == 1 and "not read" not in text.stdout
    said = " ".join(text.stdout.split())
    assert "no table (failed)" in said and "ompi-not-enough-slots" in said
    alone_ranks = HELD_OUT / "charliecloud_ranks_alone_comm_size_1.out"
    said = " ".join(doctor(alone_ranks).stdout.split())
    assert "Hello from 0 (comm size: 1)" in said and "A known message above names the cause" not in said
    document = json.loads(doctor(alone_ranks, tmp_path, "--json").stdout)
    assert document["status"] == 1 and document["unreadable"] and document["files"][0]["unrecognised"]["count"] == 1
    alone = doctor(HELD_OUT / "osu_latency_efa_intranode_no_reference.out", tmp_path, "--json")
    assert alone.returncode == json.loads(alone.stdout)["status"] == 2
    # text with neither a table nor a message is read too, saying so: only what is not text is refused
    (tmp_path / "hello.out").write_text("Hello from 0\nHello from 1\n")
    hello = doctor(tmp_path / "hello.out")
    said = " ".join(hello.stdout.split())
    assert hello.returncode == 0 and "no table, no message" in said and "not read" not in said


def test_figures_without_a_reference_are_said_not_judged_and_a_source_list_printed_once():
    table = HELD_OUT / "osu_latency_efa_intranode_no_reference.out"
    text = doctor(table)
    assert text.returncode == 0
    assert "figures not judged: give --like ref:NAME" in " ".join(text.stdout.split())
    assert "mpistack references" in text.stdout
    assert "not judged" not in doctor(table, "--like", "ref:alps-gh200-mpich-ce").stdout
    two = doctor(HELD_OUT / "charliecloud_ranks_alone_comm_size_1.out", HELD_OUT / "cray_pmi_alps_warnings.out")
    assert two.stdout.count("rule output-ended; source:") == 1 and "not judged" not in two.stdout
    assert [line for line in two.stdout.splitlines() if len(line) > 80 and " " in line.strip()] == []


def test_an_unreadable_file_is_one_line_beside_the_others():
    # (a directory of its own that any account may enter: pytest's are its owner's alone)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        directory.chmod(0o755)
        locked = directory / "locked.out"
        locked.write_text((HELD_OUT / "nccl_shm_kubeflow.out").read_text())
        locked.chmod(0)
        # root reads any file: the command then runs as an ordinary account, as a user would meet it
        command = [*MPISTACK, "doctor", str(locked), str(directory / "missing.out")]
        if os.geteuid() == 0:
            command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
        result = subprocess.run(command, capture_output=True, text=True,
                                env={**plain_environment(), "COLUMNS": "200"}, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"not read: {locked}: cannot read: Permission denied" in result.stdout
    assert f"not read: {directory / 'missing.out'}: cannot read: No such file or directory" in result.stdout
