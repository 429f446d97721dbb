// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Verifier diagnostics of monarch.topology.

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
// expected-error @+1 {{mesh @mesh has no dimension "nodes"}}
monarch.topology for @mesh hosts ["nodes"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)

// -----

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
// expected-error @+1 {{intra bandwidth must be a positive number of GB/s, got 0}}
monarch.topology for @mesh hosts ["hosts"] intra nvlink(0.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)

// -----

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
// expected-error @+1 {{inter latency must be a non-negative number of microseconds, got -1}}
monarch.topology for @mesh hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, -1.0 us)

// -----

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
// expected-error @+1 {{duplicate mesh dimension "hosts"}}
monarch.topology for @mesh hosts ["hosts", "hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)

// -----

// expected-error @+1 {{@nowhere does not name a monarch.proc_mesh}}
monarch.topology for @nowhere hosts [] intra shm(10.0 GBps, 1.0 us) inter network(25.0 GBps, 10.0 us)

// -----

shard.grid @grid(shape = 2x2)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.mesh_slice @s of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half
// A topology describes a whole proc mesh, not a slice of it.
// expected-error @+1 {{@s does not name a monarch.proc_mesh}}
monarch.topology for @s hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)

// -----

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.topology for @mesh hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)
// expected-error @+1 {{mesh @mesh already has a topology}}
monarch.topology for @mesh hosts ["gpus"] intra pcie(25.0 GBps, 5.0 us) inter network(25.0 GBps, 10.0 us)
