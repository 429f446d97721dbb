//===- ReadAheadTransport.h - One recv per small frame -------*- C++ -*-===//
//
// TFramedTransport reads a frame as two reads of its socket (the 4-byte
// length, then the body), and each read of a server-side TSocket is a poll
// plus a recv. Put between the socket and the framed transport, this layer
// asks the socket for up to 64 KB at once, so a small control message (a
// runStep is ~150 bytes) costs one recv instead of two; reads larger than
// the buffer go straight to the socket. The bytes read from the socket are
// the same, so the configured message limits see the same totals.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_READAHEADTRANSPORT_H
#define MONARCH_EXECUTOR_CONTROL_READAHEADTRANSPORT_H

#include <thrift/transport/TVirtualTransport.h>

#include <memory>
#include <vector>

namespace monarch::executor {

/// Polls socket `fd` without blocking for up to `us` microseconds, until it
/// has bytes (or an end or error) to read: a reply or request expected
/// within that window is then read without the sleep and wake-up of a
/// blocking read.
void spinUntilReadable(int fd, int us);

class ReadAheadTransport
    : public apache::thrift::transport::TVirtualTransport<ReadAheadTransport> {
public:
  static constexpr uint32_t kBufferBytes = 64 << 10;

  /// With `spinUs` > 0, a read that finds nothing buffered first polls the
  /// socket without blocking for up to that long (see spinUntilReadable in
  /// ThriftGlue.h): a worker's next request, in a loop of short steps,
  /// then arrives without a sleep and a wake-up.
  explicit ReadAheadTransport(
      std::shared_ptr<apache::thrift::transport::TTransport> inner,
      int spinUs = 0)
      : inner_(std::move(inner)), buffer_(kBufferBytes), spinUs_(spinUs) {}

  const std::shared_ptr<apache::thrift::transport::TTransport> &
  getUnderlyingTransport() const {
    return inner_;
  }

  bool isOpen() const override { return inner_->isOpen(); }
  bool peek() override { return begin_ < end_ || inner_->peek(); }
  void open() override { inner_->open(); }
  void close() override {
    begin_ = end_ = 0;
    inner_->close();
  }

  uint32_t read(uint8_t *buf, uint32_t len);
  /// Bytes read from the socket and not handed out yet.
  uint32_t buffered() const { return end_ - begin_; }
  void write(const uint8_t *buf, uint32_t len) { inner_->write(buf, len); }
  void flush() override { inner_->flush(); }

private:
  void spin();
  std::shared_ptr<apache::thrift::transport::TTransport> inner_;
  std::vector<uint8_t> buffer_;
  uint32_t begin_ = 0, end_ = 0;
  int spinUs_ = 0;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_READAHEADTRANSPORT_H
