//===- ControllerProgram.cpp - Runs a compiled function's controller program
//-===//
//
// A ControllerProgram (ExecutionPlan.thrift) is what an @mc.compile function
// does on the controller: feed values into plan inputs, send control
// messages that run plans, receive fetched outputs, and return some of them.
// Values are the program's arguments, what earlier steps fetched, or scalar
// constants. A control message naming several plans runs them in order, one
// runStep (one message per worker) each.
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"

#include <cstring>
#include <deque>

namespace pm = monarch::plan;

namespace monarch::executor {
namespace {

template <typename T> std::string bytesOf(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

/// A scalar constant as a 0-d tensor of `type`.
StatusOr<HostTensor> constant(double value, const pm::ValueType &type) {
  HostTensor t;
  t.dtype = dtypeName(type.dtype);
  t.shape = type.isTensor ? type.shape : std::vector<int64_t>{};
  std::string one;
  switch (type.dtype) {
  case pm::DType::F32:
    one = bytesOf(static_cast<float>(value));
    break;
  case pm::DType::F64:
    one = bytesOf(value);
    break;
  case pm::DType::I1:
    one = bytesOf(static_cast<uint8_t>(value != 0));
    break;
  case pm::DType::I8:
    one = bytesOf(static_cast<int8_t>(value));
    break;
  case pm::DType::I16:
    one = bytesOf(static_cast<int16_t>(value));
    break;
  case pm::DType::I32:
    one = bytesOf(static_cast<int32_t>(value));
    break;
  case pm::DType::I64:
    one = bytesOf(static_cast<int64_t>(value));
    break;
  case pm::DType::UI8:
    one = bytesOf(static_cast<uint8_t>(value));
    break;
  default:
    return Status(StatusCode::Unimplemented,
                  std::string("constants of type ") + dtypeName(type.dtype));
  }
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data += one;
  return t;
}

} // namespace

std::vector<std::string> Controller::programs() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<std::string> names;
  for (auto &[name, _] : impl_->registry.programs)
    names.push_back(name);
  return names;
}

StatusOr<std::vector<HostTensor>>
Controller::call(const std::string &name, const std::vector<HostTensor> &args) {
  return call(name, args, {});
}

StatusOr<std::vector<HostTensor>>
Controller::call(const std::string &name, const std::vector<HostTensor> &args,
                 const std::vector<bool> &keep) {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> callLock(s.callMutex);
  PlanRegistry::LoadedProgram loaded;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.registry.programs.find(name);
    if (it == s.registry.programs.end())
      return Status(StatusCode::NotFound,
                    "no controller program named '" + name + "' is loaded");
    loaded = it->second;
  }
  const pm::ExecutionPlan &file = *loaded.file;
  const pm::ControllerProgram &program = *loaded.program;
  if (args.size() != program.inputs.size())
    return Status(StatusCode::InvalidArgument,
                  "'" + name + "' takes " +
                      std::to_string(program.inputs.size()) +
                      " arguments, got " + std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const pm::ValueType &type = program.inputs[i];
    std::vector<int64_t> shape =
        type.isTensor ? type.shape : std::vector<int64_t>{};
    if (args[i].dtype != dtypeName(type.dtype) || args[i].shape != shape) {
      HostTensor want;
      want.dtype = dtypeName(type.dtype);
      want.shape = shape;
      return Status(StatusCode::InvalidArgument,
                    "argument " + std::to_string(i) + " of '" + name +
                        "' must be " + want.describe() + ", got " +
                        args[i].describe());
    }
  }

  // Values are borrowed, not copied: arguments stay in `args`, each step's
  // outputs and each constant are kept in `kept` (stable addresses) until
  // the results are taken out of them. A 256 KB tensor copied costs more
  // than sending it (page faults of the fresh allocation included).
  std::deque<std::vector<HostTensor>> kept;
  std::map<int, const HostTensor *> fetched; // by step index
  auto resolve =
      [&](const pm::ValueRef &ref,
          const pm::ValueType &type) -> StatusOr<const HostTensor *> {
    switch (ref.kind) {
    case pm::ValueKind::Argument:
      if (ref.index < 0 || ref.index >= static_cast<int>(args.size()))
        return Status(StatusCode::InvalidArgument, "argument out of range");
      return &args[ref.index];
    case pm::ValueKind::Fetched: {
      auto it = fetched.find(ref.index);
      if (it == fetched.end())
        return Status(StatusCode::InvalidArgument,
                      "step " + std::to_string(ref.index) +
                          " fetched nothing (yet)");
      return it->second;
    }
    case pm::ValueKind::Constant: {
      auto value = constant(ref.constant, type);
      if (!value.isOk())
        return value.status();
      kept.emplace_back().push_back(std::move(value).value());
      return &kept.back().back();
    }
    }
    return Status(StatusCode::InvalidArgument, "unknown value kind");
  };

  // Results that stay on the workers: the fetches they come from, by plan
  // (not with a restart policy, which would lose them).
  std::map<int, std::set<int>> keeps;
  if (!s.recovery.policy.enabled())
    for (size_t i = 0; i < keep.size() && i < program.results.size(); ++i) {
      const pm::ValueRef &ref = program.results[i];
      if (!keep[i] || ref.kind != pm::ValueKind::Fetched || ref.index < 0 ||
          ref.index >= static_cast<int>(program.steps.size()))
        continue;
      const pm::ControlStep &fetch = program.steps[ref.index];
      if (fetch.kind == pm::ControlStepKind::FetchOutput)
        keeps[fetch.plan].insert(static_cast<int>(fetch.index));
    }
  std::map<int, std::map<int, const HostTensor *>> feeds; // plan -> input
  std::map<int, std::vector<HostTensor> *> outputs;       // plan -> last
  auto planAt = [&](int32_t p) -> const pm::StepPlan * {
    return p >= 0 && p < static_cast<int32_t>(file.plans.size())
               ? &file.plans[p]
               : nullptr;
  };
  std::vector<std::vector<int32_t>> pending; // control messages not sent
  auto flush = [&]() -> Status {
    for (const std::vector<int32_t> &plans : pending)
      for (int32_t p : plans) {
        const pm::StepPlan *plan = planAt(p);
        std::vector<const HostTensor *> inputs(plan->inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
          auto it = feeds[p].find(static_cast<int>(i));
          if (it == feeds[p].end())
            return Status(StatusCode::InvalidArgument,
                          "'" + name + "': input " + std::to_string(i) +
                              " of plan '" + plan->symbol + "' was never fed");
          inputs[i] = it->second;
        }
        auto keepHere = keeps.find(p);
        auto result =
            runStepRefs(plan->symbol, inputs,
                        keepHere == keeps.end() ? nullptr : &keepHere->second);
        if (!result.isOk())
          return result.status();
        kept.push_back(std::move(result).value());
        outputs[p] = &kept.back();
      }
    pending.clear();
    return Status::ok();
  };
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const pm::ControlStep &step = program.steps[k];
    switch (step.kind) {
    case pm::ControlStepKind::FeedInput: {
      auto value = resolve(step.value, step.type);
      if (!value.isOk())
        return value.status().withContext("'" + name + "' step " +
                                          std::to_string(k));
      feeds[step.plan][step.index] = *value;
      break;
    }
    case pm::ControlStepKind::ControlMsg: {
      for (const pm::ScalarArg &scalar : step.scalars) {
        auto value = resolve(scalar.value, scalar.type);
        if (!value.isOk())
          return value.status();
        feeds[scalar.plan][scalar.input] = *value;
      }
      // Sent when something needs it, so feeds that follow the message in
      // program order still reach it.
      for (int32_t p : step.plans)
        if (!planAt(p))
          return Status(StatusCode::InvalidArgument, "plan index out of range");
      pending.push_back(step.plans);
      break;
    }
    case pm::ControlStepKind::FetchOutput: {
      if (Status st = flush(); !st)
        return st;
      auto it = outputs.find(step.plan);
      if (it == outputs.end() || step.index < 0 ||
          step.index >= static_cast<int>(it->second->size()))
        return Status(StatusCode::InvalidArgument,
                      "'" + name + "' step " + std::to_string(k) +
                          " fetches an output of a plan that did not run");
      fetched[static_cast<int>(k)] = &(*it->second)[step.index];
      break;
    }
    case pm::ControlStepKind::Await:
      // runStep returns once the step completed on every rank.
      if (Status st = flush(); !st)
        return st;
      break;
    }
  }
  if (Status st = flush(); !st)
    return st;
  // Results are moved out of what we kept, unless one value is returned
  // twice (or is an argument, which the caller owns).
  std::map<const HostTensor *, int> uses;
  std::vector<const HostTensor *> values;
  for (size_t i = 0; i < program.results.size(); ++i) {
    pm::ValueType type =
        i < program.outputs.size() ? program.outputs[i] : pm::ValueType{};
    auto value = resolve(program.results[i], type);
    if (!value.isOk())
      return value.status().withContext("result " + std::to_string(i));
    values.push_back(*value);
    ++uses[*value];
  }
  std::vector<HostTensor> results;
  results.reserve(values.size());
  for (const HostTensor *value : values) {
    bool argument = false;
    for (const HostTensor &a : args)
      argument |= &a == value;
    if (!argument && uses[value] == 1)
      results.push_back(std::move(*const_cast<HostTensor *>(value)));
    else
      results.push_back(*value);
  }
  return results;
}

} // namespace monarch::executor
