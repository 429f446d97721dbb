// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Verifier diagnostics of monarch.proc_mesh and monarch.mesh_slice (and the
// shard.grid each of them names).

shard.grid @g(shape = 4)
// expected-error @+1 {{'monarch.proc_mesh' op must have at least one dimension}}
"monarch.proc_mesh"() <{sym_name = "m", dims = [], shape = array<i64>, grid = @g}> : () -> ()

// -----

shard.grid @g(shape = 4)
// expected-error @+1 {{'monarch.proc_mesh' op has 2 dimension names but 1 sizes}}
"monarch.proc_mesh"() <{sym_name = "m", dims = ["hosts", "gpus"], shape = array<i64: 4>, grid = @g}> : () -> ()

// -----

shard.grid @g(shape = 1x0)
// expected-error @+1 {{dimension "gpus" must have a positive size, got 0}}
monarch.proc_mesh @m(hosts = 1, gpus = 0) grid @g

// -----

shard.grid @g(shape = 1x4)
// expected-error @+1 {{dimension "hosts" must have a positive size, got -1}}
monarch.proc_mesh @m(hosts = -1, gpus = 4) grid @g

// -----

shard.grid @g(shape = 1x4)
// expected-error @+1 {{mesh dimension names must be non-empty}}
monarch.proc_mesh @m("" = 1, gpus = 4) grid @g

// -----

shard.grid @g(shape = 2x4)
// expected-error @+1 {{duplicate mesh dimension "gpus"}}
monarch.proc_mesh @m(gpus = 2, gpus = 4) grid @g

// -----

// expected-error @+1 {{@nogrid does not name a shard.grid}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @nogrid

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @other(hosts = 1, gpus = 4) grid @g
// A symbol that exists but is not a shard.grid.
// expected-error @+1 {{@other does not name a shard.grid}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @other

// -----

shard.grid @g(shape = 2x2)
// expected-error @+1 {{grid @g has shape [2, 2] but the mesh has shape [1, 4]}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g

// -----

shard.grid @g(shape = 4)
// Same number of ranks, different rank of the grid.
// expected-error @+1 {{grid @g has shape [4] but the mesh has shape [1, 4]}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{'monarch.mesh_slice' op must have at least one dimension}}
"monarch.mesh_slice"() <{sym_name = "s", parent = @m, dims = [], starts = array<i64>, ends = array<i64>, grid = @half}> : () -> ()

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{'monarch.mesh_slice' op needs one range per dimension}}
"monarch.mesh_slice"() <{sym_name = "s", parent = @m, dims = ["hosts", "gpus"], starts = array<i64: 0, 0>, ends = array<i64: 1>, grid = @half}> : () -> ()

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{range 2 to 2 of dimension "gpus" is empty or negative}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 2 to 2) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{range -1 to 1 of dimension "gpus" is empty or negative}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = -1 to 1) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{range 3 to 1 of dimension "gpus" is empty or negative}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 3 to 1) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{mesh dimension names must be non-empty}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, "" = 0 to 2) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{duplicate mesh dimension "hosts"}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, hosts = 0 to 2) grid @half

// -----

shard.grid @half(shape = 1x2)
// expected-error @+1 {{'monarch.mesh_slice' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.mesh_slice @s of @nomesh(hosts = 0 to 1, gpus = 0 to 2) grid @half

// -----

shard.grid @half(shape = 1x2)
// The parent is a symbol, but not a mesh.
// expected-error @+1 {{@half does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.mesh_slice @s of @half(hosts = 0 to 1, gpus = 0 to 2) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{slices 1 dimensions but parent @m has 2}}
monarch.mesh_slice @s of @m(gpus = 0 to 2) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// A dimension name that the parent does not have.
// expected-error @+1 {{dimension #1 is "cpus" but parent @m names it "gpus"}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, cpus = 0 to 2) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 4x1)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// The parent's dimensions, in the wrong order.
// expected-error @+1 {{dimension #0 is "gpus" but parent @m names it "hosts"}}
monarch.mesh_slice @s of @m(gpus = 0 to 4, hosts = 0 to 1) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{range 3 to 5 of dimension "gpus" exceeds its size 4 in parent @m}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 3 to 5) grid @half

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
shard.grid @one(shape = 1x1)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
// A slice of a slice: ranges are relative to the parent slice (2 gpus).
// expected-error @+1 {{range 2 to 3 of dimension "gpus" exceeds its size 2 in parent @s}}
monarch.mesh_slice @t of @s(hosts = 0 to 1, gpus = 2 to 3) grid @one

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{grid @g has shape [1, 4] but the mesh has shape [1, 2]}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 0 to 2) grid @g

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{@nogrid does not name a shard.grid}}
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 0 to 2) grid @nogrid

// -----

shard.grid @g(shape = 1x4)
// expected-note @+1 {{see existing symbol definition here}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{redefinition of symbol named 'm'}}
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g

// -----

// A slice chain must end at a proc mesh: a slice of itself is a cycle.
shard.grid @g(shape = 4)
// expected-error @+1 {{'monarch.mesh_slice' op slice chain through @a is a cycle and never reaches a monarch.proc_mesh}}
monarch.mesh_slice @a of @a(gpus = 0 to 4) grid @g

// -----

// Two slices that are each other's parent.
shard.grid @g(shape = 4)
// expected-error @+1 {{'monarch.mesh_slice' op slice chain through @b is a cycle and never reaches a monarch.proc_mesh}}
monarch.mesh_slice @a of @b(gpus = 0 to 4) grid @g
monarch.mesh_slice @b of @a(gpus = 0 to 4) grid @g


// -----

shard.grid @g(shape = 65536x65536)
// expected-error @+1 {{'monarch.proc_mesh' op has more than 1073741824 ranks}}
monarch.proc_mesh @m(hosts = 65536, gpus = 65536) grid @g
