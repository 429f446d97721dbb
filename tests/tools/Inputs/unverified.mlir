// A module that parses but does not verify.

monarch.proc_mesh @m(gpus = 2) grid @nogrid
