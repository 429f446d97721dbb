//===- PlanFile.cpp - .mcplan header, compact protocol -------- -*- C++ -*-===//
//
// The one place Thrift's exceptions live for plan files: every Thrift call is
// wrapped and turned into a Status, so callers (including -fno-exceptions
// compiler code) never see a throw. Untrusted input is bounded: the header
// says how many payload bytes follow and their checksum, and the decoder may
// not read past them or allocate strings and containers larger than them.
//
//===----------------------------------------------------------------------===//

#include "monarch/Plan/PlanFile.h"

#include "PlanThrift.h"

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <iterator>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace monarch::plan {

using apache::thrift::TConfiguration;
using apache::thrift::protocol::TCompactProtocolT;
using apache::thrift::transport::TMemoryBuffer;

static Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t planChecksum(std::string_view bytes) {
  // Four lanes of FNV-1a's xor-multiply over 8-byte little-endian words,
  // each rotated (a bijection: one flipped bit always changes the sum),
  // then the lanes, the tail bytes and the length folded in; byte-at-a-
  // time FNV-1a was 8% of a 4,096-rank worker's bind.
  constexpr uint64_t prime = 0x100000001b3ULL, basis = 0xcbf29ce484222325ULL;
  auto word = [&bytes](size_t at) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + at, 8);
    if constexpr (std::endian::native == std::endian::big)
      w = __builtin_bswap64(w);
    return w;
  };
  auto rotl = [](uint64_t v, int n) { return v << n | v >> (64 - n); };
  uint64_t lane[4] = {basis, basis ^ 1, basis ^ 2, basis ^ 3};
  size_t whole = bytes.size() / 32 * 32;
  for (size_t at = 0; at < whole; at += 32)
    for (int k = 0; k < 4; ++k)
      lane[k] = rotl((lane[k] ^ word(at + 8 * k)) * prime, 29);
  uint64_t h = basis;
  for (uint64_t l : lane)
    h = (h ^ l) * prime;
  return fnv1a64(bytes.substr(whole), h ^ bytes.size());
}

static void putLE(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

static uint64_t getLE(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i]))
         << (8 * i);
  return v;
}

StatusOr<std::string> serializePlan(const ExecutionPlan &plan) {
  return serializePlan(plan, PlanChecked::Unchecked);
}

StatusOr<std::string> serializePlan(const ExecutionPlan &plan,
                                    PlanChecked checked) {
  if (checked != PlanChecked::Validated)
    if (Status s = validatePlan(plan); !s)
      return s.withContext("cannot serialize an invalid plan");
  std::string payload;
  try {
    auto buffer = std::make_shared<TMemoryBuffer>();
    TCompactProtocolT<TMemoryBuffer> protocol(buffer);
    detail::toThrift(plan).write(&protocol);
    payload = buffer->getBufferAsString();
  } catch (const std::exception &e) {
    return Status(StatusCode::Internal,
                  std::string("cannot encode the plan: ") + e.what());
  }
  std::string file(kPlanMagic, sizeof(kPlanMagic));
  putLE(file, static_cast<uint32_t>(kPlanFormatVersion), 4);
  putLE(file, 0, 4);
  putLE(file, payload.size(), 8);
  putLE(file, planChecksum(payload), 8);
  file += payload;
  return file;
}

StatusOr<uint32_t> peekPlanFormatVersion(std::string_view bytes) {
  size_t magicBytes = std::min(bytes.size(), sizeof(kPlanMagic));
  if (std::memcmp(bytes.data(), kPlanMagic, magicBytes) != 0)
    return invalid("not a monarch plan file (bad magic bytes; expected a "
                   ".mcplan file written by monarch-compile)");
  if (bytes.size() < kPlanHeaderSize)
    return invalid("truncated plan file: " + std::to_string(bytes.size()) +
                   " bytes, shorter than the " +
                   std::to_string(kPlanHeaderSize) + "-byte header");
  return static_cast<uint32_t>(getLE(bytes, 8, 4));
}

/// decodePlanPayload, or with `only` the programs of one world rank.
static StatusOr<ExecutionPlan> decodePayload(std::string_view payload,
                                             detail::RankFilter *only) {
  if (payload.size() > static_cast<size_t>(INT_MAX))
    return invalid("plan payload of " + std::to_string(payload.size()) +
                   " bytes is too large");
  wire::ExecutionPlan decoded;
  try {
    auto limit = static_cast<int>(payload.size());
    auto config = std::make_shared<TConfiguration>(limit, limit);
    auto buffer = std::make_shared<TMemoryBuffer>(
        reinterpret_cast<uint8_t *>(const_cast<char *>(payload.data())),
        static_cast<uint32_t>(payload.size()), TMemoryBuffer::OBSERVE, config);
    TCompactProtocolT<TMemoryBuffer> protocol(buffer, limit, limit);
    decoded.read(&protocol);
    if (buffer->available_read() != 0)
      return invalid(
          "corrupt plan file: " + std::to_string(buffer->available_read()) +
          " undecoded bytes after the plan");
  } catch (const std::exception &e) {
    return invalid(std::string("corrupt plan file: cannot decode the plan (") +
                   e.what() + ")");
  }
  if (decoded.formatVersion != kPlanFormatVersion)
    return invalid("plan format version " +
                   std::to_string(decoded.formatVersion) +
                   " in the payload does not match this build's version " +
                   std::to_string(kPlanFormatVersion));
  StatusOr<ExecutionPlan> plan = detail::fromThrift(decoded, only);
  if (!plan)
    return plan.status().withContext("corrupt plan file");
  if (Status s = validatePlan(*plan, only ? ValidateScope::KeptRanks
                                          : ValidateScope::AllRanks);
      !s)
    return s.withContext("invalid plan");
  return plan;
}

StatusOr<ExecutionPlan> decodePlanPayload(std::string_view payload) {
  return decodePayload(payload, nullptr);
}

/// The payload of a plan file whose header checks out.
static StatusOr<std::string_view> planPayload(std::string_view bytes) {
  StatusOr<uint32_t> version = peekPlanFormatVersion(bytes);
  if (!version)
    return version.status();
  if (*version != static_cast<uint32_t>(kPlanFormatVersion))
    return invalid("plan format version " + std::to_string(*version) +
                   " is not supported: this build reads version " +
                   std::to_string(kPlanFormatVersion) +
                   "; recompile the program with this monarch-compile");
  uint64_t size = getLE(bytes, 16, 8), checksum = getLE(bytes, 24, 8);
  uint64_t have = bytes.size() - kPlanHeaderSize;
  if (have < size)
    return invalid("truncated plan file: the header announces " +
                   std::to_string(size) + " payload bytes, the file has " +
                   std::to_string(have));
  if (have > size)
    return invalid("corrupt plan file: " + std::to_string(have - size) +
                   " unexpected bytes after the plan");
  std::string_view payload = bytes.substr(kPlanHeaderSize);
  if (planChecksum(payload) != checksum)
    return invalid("corrupt plan file: payload checksum mismatch");
  return payload;
}

StatusOr<ExecutionPlan> deserializePlan(std::string_view bytes) {
  StatusOr<std::string_view> payload = planPayload(bytes);
  if (!payload)
    return payload.status();
  return decodePayload(*payload, nullptr);
}

StatusOr<SharedPlan> decodeSharedPlan(std::string bytes) {
  StatusOr<ExecutionPlan> decoded = deserializePlan(bytes);
  if (!decoded)
    return decoded.status();
  SharedPlan shared;
  shared.bytes = std::make_shared<const std::string>(std::move(bytes));
  shared.plan =
      std::make_shared<const ExecutionPlan>(std::move(decoded).value());
  return shared;
}

StatusOr<RankPlan> deserializePlanForRank(std::string_view bytes,
                                          int64_t worldRank) {
  StatusOr<std::string_view> payload = planPayload(bytes);
  if (!payload)
    return payload.status();
  detail::RankFilter only;
  only.worldRank = worldRank;
  StatusOr<ExecutionPlan> plan = decodePayload(*payload, &only);
  if (!plan)
    return plan.status();
  return RankPlan{std::move(*plan), std::move(only.commStreams),
                  std::move(only.backends)};
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

static std::string errnoText(int err) { return std::strerror(err); }

StatusOr<std::string> readFileBytes(const std::string &path) {
  int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return Status(StatusCode::NotFound,
                  "cannot open '" + path + "': " + errnoText(errno));
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return invalid("cannot read '" + path + "': it is a directory");
  }
  std::string bytes;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      if (fd != STDIN_FILENO)
        ::close(fd);
      return Status(StatusCode::Internal,
                    "cannot read '" + path + "': " + errnoText(err));
    }
    if (n == 0)
      break;
    bytes.append(chunk, static_cast<size_t>(n));
  }
  if (fd != STDIN_FILENO)
    ::close(fd);
  return bytes;
}

StatusOr<ExecutionPlan> readPlanFile(const std::string &path) {
  StatusOr<std::string> bytes = readFileBytes(path);
  if (!bytes)
    return bytes.status();
  StatusOr<ExecutionPlan> plan = deserializePlan(*bytes);
  if (!plan)
    return plan.status().withContext(path);
  return plan;
}

Status writeFileAtomically(const std::string &path, std::string_view bytes) {
  // The temporary lives beside the target so that rename() is atomic.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return Status(StatusCode::Internal, "cannot create a temporary file for '" +
                                            path + "': " + errnoText(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(StatusCode::Internal,
                    "cannot write '" + path + "': " + errnoText(err));
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; plans and cache entries are ordinary files.
  ::fchmod(fd, 0644);
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status(StatusCode::Internal,
                  "cannot write '" + path + "': " + errnoText(err));
  }
  return Status::ok();
}

Status writePlanFile(const ExecutionPlan &plan, const std::string &path) {
  StatusOr<std::string> bytes = serializePlan(plan);
  if (!bytes)
    return bytes.status();
  return writeFileAtomically(path, *bytes);
}

} // namespace monarch::plan
