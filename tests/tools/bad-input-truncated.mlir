// Truncated input files are parse errors reported as `file:line:col: error:`
// at the point where the text stops, with a non-zero exit and no crash (`not`
// without --crash fails the test if monarch-opt crashes).
//
// RUN: not monarch-opt %S/Inputs/truncated.mlir 2>&1 | FileCheck %s --check-prefix=BODY
// RUN: not monarch-opt %S/Inputs/truncated-region.mlir 2>&1 | FileCheck %s --check-prefix=REGION
// RUN: not monarch-opt %S/Inputs/truncated-type.mlir 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not monarch-opt %S/Inputs/truncated.mlir -o %t.out 2>&1 | FileCheck %s --check-prefix=BODY
// RUN: not test -s %t.out

// Cut off after the first op of an endpoint body: the closing braces of the
// endpoint and the actor class are missing.
// BODY-NOT: PLEASE submit a bug report
// BODY: {{.*}}Inputs{{[/\\]}}truncated.mlir:8:48: error: expected operation name in quotes
// BODY-NOT: Stack dump

// Cut off right after `{`.
// REGION-NOT: PLEASE submit a bug report
// REGION: {{.*}}Inputs{{[/\\]}}truncated-region.mlir:2:25: error: expected operation name in quotes
// REGION-NOT: Stack dump

// Cut off in the middle of a tensor type, without a final newline.
// TYPE-NOT: PLEASE submit a bug report
// TYPE: {{.*}}Inputs{{[/\\]}}truncated-type.mlir:6:31: error: expected 'x' in dimension list
// TYPE-NOT: Stack dump
