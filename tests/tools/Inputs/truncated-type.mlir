// A file that stops in the middle of a type (no trailing newline; used by
// ../bad-input-truncated.mlir; not a test itself).
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @S {
  monarch.state @w : tensor<4x4