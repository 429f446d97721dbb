// Only the opening of an actor class (used by ../bad-input-truncated.mlir).
monarch.actor_class @S {
