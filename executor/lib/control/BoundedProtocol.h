//===- BoundedProtocol.h - Binary protocol that allocates what it received ===//
//
// Thrift's generated readers size a container from the count on the wire
// (`feeds.resize(n)`) and a string from its length (`str.resize(n)`) before
// reading a single element. TBinaryProtocol's own check multiplies the count
// by a minimum element size in 32 bits (it overflows for 8-byte elements) and
// counts a struct as 0 bytes, so a 34-byte frame declaring 2^24 feeds made a
// worker allocate 2.4 GB, and one declaring 2^31-1 elements aborted it.
//
// This protocol refuses, before anything is allocated, any container or
// string whose declared size cannot fit in the bytes left in the message:
// every element takes at least one byte on the wire (a struct its stop
// byte), so what a reader allocates is bounded by what it has received.
// `bytesLeft` says how many bytes of the current message remain (the framed
// transport's frame, a memory buffer's contents). Header-only: the control
// plane and its libFuzzer target (tests/unit/executor-control) both use it.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_BOUNDEDPROTOCOL_H
#define MONARCH_EXECUTOR_CONTROL_BOUNDEDPROTOCOL_H

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TProtocolException.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace monarch::executor {

class BoundedBinaryProtocol
    : public apache::thrift::protocol::TVirtualProtocol<
          BoundedBinaryProtocol, apache::thrift::protocol::TBinaryProtocol> {
  using Base = apache::thrift::protocol::TBinaryProtocol;
  using TType = apache::thrift::protocol::TType;
  using TProtocolException = apache::thrift::protocol::TProtocolException;

public:
  using BytesLeft = std::function<uint64_t()>;

  BoundedBinaryProtocol(
      std::shared_ptr<apache::thrift::transport::TTransport> transport,
      BytesLeft bytesLeft)
      : TVirtualProtocol(std::move(transport)),
        bytesLeft_(std::move(bytesLeft)) {
    setStrict(/*strict_read=*/true, /*strict_write=*/true);
  }

  /// The fewest bytes one element of `type` takes on the wire.
  static uint64_t minWireBytes(TType type) {
    using namespace apache::thrift::protocol;
    switch (type) {
    case T_BOOL:
    case T_BYTE:
    case T_STRUCT: // at least its stop byte
      return 1;
    case T_I16:
      return 2;
    case T_I32:
    case T_STRING: // a length
    case T_MAP:    // key type, value type and count: 6
    case T_SET:
    case T_LIST:
      return 4;
    case T_DOUBLE:
    case T_I64:
      return 8;
    default:
      throw TProtocolException(TProtocolException::INVALID_DATA,
                               "unknown element type " +
                                   std::to_string(static_cast<int>(type)));
    }
  }

  uint32_t readMessageBegin(std::string &name,
                            apache::thrift::protocol::TMessageType &type,
                            int32_t &seqid) {
    int32_t word = 0;
    uint32_t got = readI32(word);
    if (word >= 0 || (word & VERSION_MASK) != VERSION_1)
      throw TProtocolException(TProtocolException::BAD_VERSION,
                               "not a strict binary protocol message");
    type = static_cast<apache::thrift::protocol::TMessageType>(word & 0xff);
    got += readString(name);
    got += readI32(seqid);
    return got;
  }

  uint32_t readListBegin(TType &elemType, uint32_t &size) {
    uint32_t got = Base::readListBegin(elemType, size);
    require(size, minWireBytes(elemType), "list");
    return got;
  }

  uint32_t readSetBegin(TType &elemType, uint32_t &size) {
    uint32_t got = Base::readSetBegin(elemType, size);
    require(size, minWireBytes(elemType), "set");
    return got;
  }

  uint32_t readMapBegin(TType &keyType, TType &valType, uint32_t &size) {
    uint32_t got = Base::readMapBegin(keyType, valType, size);
    require(size, minWireBytes(keyType) + minWireBytes(valType), "map");
    return got;
  }

  uint32_t readString(std::string &str) {
    int32_t size = 0;
    uint32_t got = readI32(size);
    if (size < 0)
      throw TProtocolException(TProtocolException::NEGATIVE_SIZE);
    require(static_cast<uint32_t>(size), 1, "string");
    return got + readStringBody(str, size);
  }

  uint32_t readBinary(std::string &str) { return readString(str); }

private:
  void require(uint64_t count, uint64_t bytesEach, const char *what) {
    uint64_t left = bytesLeft_();
    // 64-bit: count < 2^32 and bytesEach <= 16.
    if (count * bytesEach > left)
      throw TProtocolException(
          TProtocolException::SIZE_LIMIT,
          std::string(what) + " of " + std::to_string(count) +
              " elements declared with " + std::to_string(left) +
              " bytes left in the message");
  }

  BytesLeft bytesLeft_;
};

/// Makes BoundedBinaryProtocols over transports that know how much of their
/// message is left: `budgetOf` gives a transport's BytesLeft (once per
/// connection).
class BoundedBinaryProtocolFactory
    : public apache::thrift::protocol::TProtocolFactory {
public:
  using BudgetOf = std::function<BoundedBinaryProtocol::BytesLeft(
      const std::shared_ptr<apache::thrift::transport::TTransport> &)>;
  explicit BoundedBinaryProtocolFactory(BudgetOf budgetOf)
      : budgetOf_(std::move(budgetOf)) {}

  std::shared_ptr<apache::thrift::protocol::TProtocol> getProtocol(
      std::shared_ptr<apache::thrift::transport::TTransport> trans) override {
    BoundedBinaryProtocol::BytesLeft left = budgetOf_(trans);
    return std::make_shared<BoundedBinaryProtocol>(std::move(trans),
                                                   std::move(left));
  }

private:
  BudgetOf budgetOf_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_BOUNDEDPROTOCOL_H
