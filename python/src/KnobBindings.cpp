//===- KnobBindings.cpp - The MONARCH_* registry for Python ---------------===//
//
// `knob_table()` and `knob_check(name, text)`: monarch_compile.knobs reads
// the C++ registry (monarch/Support/Knobs.h) through these, so the two can
// not drift apart.
//
//===----------------------------------------------------------------------===//
#include "monarch/Support/Knobs.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;
namespace knobs = monarch::knobs;

void bindKnobs(nb::module_ &m) {
  m.def(
      "knob_table",
      [] {
        nb::list out;
        for (const knobs::Knob &k : knobs::all()) {
          nb::dict d;
          d["name"] = k.name;
          d["type"] = knobs::typeName(k.type);
          d["default"] = k.defaultValue;
          d["min"] = k.min;
          d["max"] = k.max;
          d["choices"] = k.choices;
          d["readers"] = knobs::readersText(k.readers);
          d["compile_input"] = k.compileInput;
          d["doc"] = k.doc;
          out.append(d);
        }
        return out;
      },
      "Every MONARCH_* variable of the registry, in declaration order.");
  m.def(
      "knob_check",
      [](const std::string &name, const std::string &text) {
        const knobs::Knob *k = knobs::find(name);
        if (!k)
          return std::string(name + " is not a monarch variable");
        return knobs::check(*k, text);
      },
      "'' when `text` is a good value of the variable, else the message.");
}
