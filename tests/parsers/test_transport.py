"""The transport parser on real output captured on this machine (tests/parsers/data/transport/: Debian's MPICH
4.0.2 over UCX 1.13.1, the PyPI MPICH 4.3.2 wheel over its libfabric, Debian's Open MPI 4.1.4 and the PyPI
Open MPI 5.0.8 wheel, each with the probe's verbose settings), and on noise."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.campaign.probe import VERBOSE_ENV
from mpistack.parsers.transport import KEYS, describe_transport, parse_transport, path_of

DATA = Path(__file__).parent / "data" / "transport"


def parsed(name: str) -> dict[str, str]:
    return parse_transport((DATA / name).read_text(), "openmpi" if name.startswith("openmpi") else "mpich")


@pytest.mark.parametrize("name, expected", [
    # UCX_LOG_LEVEL=info: the peer endpoint's tag lanes; the endpoint to the rank itself (self/memory0) is left out
    ("mpich402-ucx-native.txt", {"layer": "ucx", "transports": "sysv/memory,cma/memory", "network": "shm",
                                 "single_copy": "cma", "probe": "UCX_LOG_LEVEL=info"}),
    ("mpich402-ucx-tls-tcp.txt", {"layer": "ucx", "transports": "tcp/lo,tcp/eth0", "network": "tcp"}),
    # one container per rank (hybrid), podman's default confinement and single-copy rights: here both attach
    ("mpich402-ucx-hybrid-default.txt", {"transports": "sysv/memory,cma/memory", "single_copy": "cma"}),
    ("mpich402-ucx-hybrid-single-copy.txt", {"transports": "sysv/memory,cma/memory", "single_copy": "cma"}),
    # MPIR_CVAR_DEBUG_SUMMARY=1 of the ch4:ofi wheel: the provider and the netmod's short-send (eager) size
    ("mpich432-ofi-tcp.txt", {"layer": "ofi", "provider": "tcp", "network": "tcp", "eager_limit": "16384",
                              "probe": "MPIR_CVAR_DEBUG_SUMMARY=1"}),
    ("mpich432-ofi-default.txt", {"layer": "ofi", "provider": "sockets", "network": "tcp"}),
    # Open MPI 4.1: pml and bml verbosity, btl_vader_single_copy_mechanism from mpi_show_mca_params
    ("openmpi414-native.txt", {"layer": "ob1", "transports": "vader,self", "network": "shm", "single_copy": "cma",
                               "eager_limit": "4096", "probe": "OMPI_MCA_pml_base_verbose=10"}),
    ("openmpi414-btl-tcp.txt", {"layer": "ob1", "transports": "tcp,self", "network": "tcp", "eager_limit": "65536"}),
    ("openmpi414-single-copy-none.txt", {"transports": "vader,self", "single_copy": "none"}),
    # the cm PML over libfabric (OMPI_MCA_pml=cm, mtl=ofi, FI_PROVIDER=tcp): mtl_ofi_verbose names the provider;
    # the "mtl:ofi:provider: eth0" line beside it names only its domain
    ("openmpi414-mtl-ofi-tcp.txt", {"layer": "cm", "provider": "tcp;ofi_rxm", "network": "tcp",
                                    "intra_via": "mtl ofi provider tcp;ofi_rxm"}),
    # Open MPI 4.1.4 compiled --with-ofi (the catalogue's source-openmpi-ofi) in its container, by default: no UCX,
    # so the cm PML wins, and its ofi MTL takes libfabric 1.17's TCP provider "net", which its default exclude list
    # (shm,sockets,tcp,udp,rstream,usnic) does not name
    ("openmpi414-source-cm-net.txt", {"layer": "cm", "provider": "net", "network": "tcp", "intra": "tcp"}),
    # Open MPI 5.0: the sm BTL and the smsc framework's choice
    ("openmpi508-native.txt", {"layer": "ob1", "transports": "sm,self", "single_copy": "cma", "network": "shm"}),
    # podman's default confinement: smsc selects cma, then each peer's attach is refused (no CAP_SYS_PTRACE)
    ("openmpi508-container-default.txt", {"transports": "sm,self", "single_copy": "none"}),
    ("openmpi508-container-single-copy.txt", {"transports": "sm,self", "single_copy": "cma"}),
])
def test_real_output_gives_the_transport_the_library_reported(name, expected):
    found = parsed(name)
    assert {key: found.get(key) for key in expected} == expected
    assert found["mpi"] == ("openmpi" if name.startswith("openmpi") else "mpich")
    assert set(found) <= set(KEYS)


def test_the_mtl_domain_alone_says_ofi_was_used_but_not_over_what():
    """Without mtl_ofi_verbose, Open MPI 4.1 names only the provider's domain: no network class is guessed."""
    text = "\n".join(line for line in (DATA / "openmpi414-mtl-ofi-tcp.txt").read_text().splitlines()
                     if "mtl:ofi:prov:" not in line)
    found = parse_transport(text, "openmpi")
    assert found["layer"] == "cm" and found["transports"] == "mtl ofi (domain eth0)" and "network" not in found


def test_a_pml_that_cannot_be_selected_is_kept_as_a_note():
    found = parsed("openmpi414-pml-ucx-fails.txt")
    assert found["note"] == "PML ucx cannot be selected" and "layer" not in found


def test_forced_tcp_and_shared_memory_differ():
    native, tcp = parsed("mpich402-ucx-native.txt"), parsed("mpich402-ucx-tls-tcp.txt")
    assert (native["network"], tcp["network"]) == ("shm", "tcp")
    assert "single_copy" not in tcp  # the library said nothing about single copy over tcp


def test_the_fixtures_carry_what_each_probe_setting_makes_the_library_print():
    """The probe's settings (campaign/probe.py) and the lines the parser needs from them."""
    assert {"OMPI_MCA_mpi_show_mca_params", "OMPI_MCA_btl_base_verbose", "OMPI_MCA_smsc_base_verbose"} <= \
        set(VERBOSE_ENV["openmpi"])
    openmpi4, openmpi5 = (DATA / "openmpi414-native.txt").read_text(), (DATA / "openmpi508-native.txt").read_text()
    assert "btl_vader_single_copy_mechanism=cma" in openmpi4 and "mca: bml: Using vader btl" in openmpi4
    assert "selected shared-memory single-copy component: cma" in openmpi5
    assert VERBOSE_ENV["mpich"] == {"UCX_LOG_LEVEL": "info", "MPIR_CVAR_DEBUG_SUMMARY": "1"}


def test_description_is_one_line_with_the_note():
    text = describe_transport({"layer": "ob1", "transports": "vader,self", "network": "shm", "single_copy": "none",
                               "note": "CMA support is not available"})
    assert text == "ob1 vader,self (shm) single-copy none; CMA support is not available"
    assert describe_transport({}) == "" and describe_transport(None) == ""


LINES = st.sampled_from([
    "ep_cfg[0]: tag(", "ep_cfg[1]: tag(sysv/memory cma/memory)", "libfabric provider: ", "select: component  selected",
    "mca: bml: Using  btl for send to", "btl_vader_eager_limit=", "btl_sm_single_copy_mechanism=xpmem",
    "selected shared-memory single-copy component: ", "UCX  WARN ", "==== UCX netmod Capability ====",
    "MPIDI_OFI_DEFAULT_SHORT_SEND_SIZE: x", "mtl:ofi:provider:", "PML  cannot be selected", "\x00", "\r",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.text(max_size=80)), max_size=30), st.sampled_from(["mpich", "openmpi", "x"]))
def test_noise_never_raises_and_gives_only_known_keys_with_text_values(lines, mpi):
    found = parse_transport("\n".join(lines), mpi)
    assert set(found) <= set(KEYS)
    assert all(isinstance(value, str) and value for value in found.values())
    describe_transport(found)


@pytest.mark.parametrize("name, nolocal, intra, inter", [
    # the wheel's MPICH over libfabric: its own shared memory between local ranks, the provider between nodes;
    # under MPIR_CVAR_NOLOCAL=1 local ranks go through the provider too
    ("mpich432-ofi-default.txt", False, ("shm", "MPICH ch4 shm"), ("tcp", "libfabric provider sockets")),
    ("mpich432-ofi-tcp.txt", False, ("shm", "MPICH ch4 shm"), ("tcp", "libfabric provider tcp")),
    ("mpich432-ofi-tcp.txt", True, ("tcp", "libfabric provider tcp (MPIR_CVAR_NOLOCAL=1)"),
     ("tcp", "libfabric provider tcp")),
    # Debian's ch4:ucx: UCX's endpoint lanes are the path (UCX_TLS=tcp leaves local ranks only tcp)
    ("mpich402-ucx-native.txt", False, ("shm", "UCX sysv/memory,cma/memory"), None),
    ("mpich402-ucx-tls-tcp.txt", True, ("tcp", "UCX tcp/lo,tcp/eth0"), ("tcp", "UCX tcp/lo,tcp/eth0")),
    # Open MPI: the BTL it chose for a peer on its own node (the probe had no remote peer)
    ("openmpi414-native.txt", False, ("shm", "btl vader"), None),
    ("openmpi414-btl-tcp.txt", False, ("tcp", "btl tcp"), None),
    ("openmpi508-native.txt", False, ("shm", "btl sm"), None),
])
def test_the_intra_and_inter_node_paths_are_recorded_apart(name, nolocal, intra, inter):
    found = parse_transport((DATA / name).read_text(), "openmpi" if name.startswith("openmpi") else "mpich", nolocal)
    assert (found["intra"], found["intra_via"]) == intra
    assert ((found["inter"], found["inter_via"]) if "inter" in found else None) == inter
    assert path_of(found, 1) == intra
    if inter:
        assert path_of(found, 2) == inter


def test_open_mpi_peers_on_another_node_are_the_inter_node_path():
    text = ("[n1:00011] mca: bml: Using self btl for send to [[5,1],0] on node n1\n"
            "[n1:00011] mca: bml: Using vader btl for send to [[5,1],1] on node n1\n"
            "[n1:00011] mca: bml: Using tcp btl for send to [[5,1],2] on node n2\n"
            "[n1:00011] select: component ob1 selected\n")
    found = parse_transport(text, "openmpi")
    assert (found["intra"], found["inter"]) == ("shm", "tcp")
    assert (found["intra_via"], found["inter_via"]) == ("btl vader", "btl tcp")


def test_a_record_stored_before_paths_falls_back_to_its_network():
    """Records of earlier campaigns: the network class, and MPICH's shared memory where the probe noted it."""
    noted = {"mpi": "mpich", "layer": "ofi", "provider": "sockets", "network": "tcp",
             "note": "ranks on one node talk through MPICH's shared memory unless MPIR_CVAR_NOLOCAL=1"}
    assert path_of(noted, 1) == ("shm", "MPICH ch4 shm")
    assert path_of(noted, 2) == ("tcp", "sockets")
    assert path_of({"network": "tcp", "transports": "tcp/lo"}, 1) == ("tcp", "tcp/lo")
    assert path_of({}, 1) == (None, "") and path_of(None, 2) == (None, "")
    assert describe_transport(noted).startswith("ofi provider sockets (tcp)")


def test_open_mpi_5s_refused_attach_is_no_single_copy_with_the_message_as_note():
    found = parsed("openmpi508-container-default.txt")
    assert found["single_copy"] == "none"
    assert found["note"].startswith("mca_smsc_cma_module_get_endpoint: can not proceed")
    assert "single_copy" not in parsed("openmpi414-btl-tcp.txt")


def test_the_ranks_confinement_lines_say_which_namespaces_a_node_s_ranks_do_not_share():
    from mpistack.parsers.transport import confinement

    line = ("mpistack-bench: confinement host={host} pid={pid} uid=1001 cap_eff={caps} ns_user={user} ns_ipc=9 "
            "ns_pid=8 ns_mnt={user}1 ns_net=7")
    two_nodes = "\n".join([line.format(host="a", pid=1, caps="0", user=5), line.format(host="a", pid=2, caps="0", user=6),
                           line.format(host="b", pid=1, caps="0", user=5)])
    assert confinement(two_nodes) == {"ns_separate": "user,mnt", "ns_ranks": "3", "cap_eff": "0"}
    one_each = "\n".join([line.format(host="a", pid=1, caps="1ff", user=5), line.format(host="b", pid=1, caps="0",
                                                                                       user=6)])
    assert confinement(one_each) == {"ns_separate": "none", "ns_ranks": "2", "cap_eff": "mixed"}
    assert confinement("no such lines\nmpistack-bench: confinement host=") == {}


def test_ranks_of_two_host_names_with_one_boot_id_are_said_to_share_one_kernel():
    """The nodes of a one-machine cluster (namespaces with host names of their own): one boot id, which UCX
    takes for one system, and the namespaces their ranks did not share between the "nodes"."""
    from mpistack.parsers.transport import confinement

    line = ("mpistack-bench: confinement host={host} pid={pid} uid=1001 cap_eff=0 ns_user={user} ns_ipc=9 "
            "ns_pid=8 ns_mnt={user}1 ns_net={net} boot={boot}")
    demo = "\n".join([line.format(host="node1", pid=10, user=5, net=1, boot="b-1"),
                      line.format(host="node2", pid=20, user=6, net=2, boot="b-1")])
    assert confinement(demo) == {"ns_separate": "none", "ns_ranks": "2", "cap_eff": "0", "one_kernel": "node1,node2",
                                 "one_kernel_separate": "user,mnt,net"}
    real = "\n".join([line.format(host="node1", pid=10, user=5, net=1, boot="b-1"),
                      line.format(host="node2", pid=10, user=5, net=1, boot="b-2")])
    assert confinement(real)["one_kernel"] == "none"  # boot ids said, none shared: nodes of their own
    assert "one_kernel" not in confinement(demo.replace(" boot=b-1", ""))  # no boot ids said: nothing known
