//===- ActorStates.cpp - Actor state and injected faults of a worker -----===//
//
// Actor state outlives every plan and step of a worker: one zero-filled,
// 64-byte aligned buffer per "@actor::@state", shared by all plans that
// declare it, written and read by the controller between steps. Also the
// parser of MONARCH_FAULT_INJECT, the tests' way to make a rank fail on
// purpose at a chosen instruction.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Interpreter.h"

#include <cstdlib>
#include <cstring>

using namespace monarch::executor;

namespace monarch::worker {

StatusOr<FaultInjection> FaultInjection::parse(const std::string &text) {
  FaultInjection fault;
  if (text.empty())
    return fault;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
  static const std::pair<const char *, Kind> kinds[] = {{"raise", Kind::Raise},
                                                        {"drop", Kind::Drop},
                                                        {"sleep", Kind::Sleep},
                                                        {"exit", Kind::Exit}};
  for (auto [name, kind] : kinds)
    if (parts[0] == name)
      fault.kind = kind;
  bool ok = fault.kind != Kind::None && parts.size() >= 3 &&
            (fault.kind != Kind::Sleep || parts.size() == 4);
  if (ok) {
    fault.step = std::atoll(parts[1].c_str());
    fault.instruction = std::atoi(parts[2].c_str());
    if (parts.size() == 4)
      fault.ms = std::atoi(parts[3].c_str());
  }
  if (!ok)
    return Status(StatusCode::InvalidArgument,
                  "MONARCH_FAULT_INJECT='" + text +
                      "': expected raise|drop|exit:STEP:INSTRUCTION or "
                      "sleep:STEP:INSTRUCTION:MS");
  return fault;
}

ActorStates::~ActorStates() {
  for (auto &[key, state] : states_)
    std::free(state.first);
}

StatusOr<char *> ActorStates::get(const std::string &key, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = states_.find(key);
  if (it != states_.end()) {
    if (it->second.second != bytes)
      return Status(StatusCode::InvalidArgument,
                    "actor state " + key + " is " +
                        std::to_string(it->second.second) +
                        " bytes in one plan and " + std::to_string(bytes) +
                        " in another");
    return it->second.first;
  }
  size_t size =
      static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  char *storage = static_cast<char *>(std::aligned_alloc(64, size));
  if (!storage)
    return Status(StatusCode::Internal, "cannot allocate actor state " + key);
  std::memset(storage, 0, size);
  states_[key] = {storage, bytes};
  return storage;
}

Status ActorStates::write(const std::string &key, const std::string &bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = states_.find(key);
  if (it == states_.end())
    return Status(StatusCode::NotFound,
                  "no loaded plan declares actor state " + key);
  if (static_cast<int64_t>(bytes.size()) != it->second.second)
    return Status(StatusCode::InvalidArgument,
                  "actor state " + key + " holds " +
                      std::to_string(it->second.second) + " bytes, got " +
                      std::to_string(bytes.size()));
  std::memcpy(it->second.first, bytes.data(), bytes.size());
  return Status::ok();
}

StatusOr<std::string> ActorStates::read(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = states_.find(key);
  if (it == states_.end())
    return Status(StatusCode::NotFound,
                  "no loaded plan declares actor state " + key);
  return std::string(it->second.first, static_cast<size_t>(it->second.second));
}

} // namespace monarch::worker
