//===- ReadAheadTransport.cpp - One recv per small frame ------------------===//
//
// See ReadAheadTransport.h.
//
//===----------------------------------------------------------------------===//
#include "ReadAheadTransport.h"

#include <thrift/transport/TSocket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/socket.h>

namespace monarch::executor {

void spinUntilReadable(int fd, int us) {
  if (fd < 0 || us <= 0)
    return;
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  char byte;
  do {
    if (::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) != -1 ||
        (errno != EAGAIN && errno != EWOULDBLOCK))
      return; // data, end of stream or an error: the read will tell
  } while (std::chrono::steady_clock::now() < until);
}

void ReadAheadTransport::spin() {
  auto socket =
      std::dynamic_pointer_cast<apache::thrift::transport::TSocket>(inner_);
  spinUntilReadable(socket ? socket->getSocketFD() : -1, spinUs_);
}

uint32_t ReadAheadTransport::read(uint8_t *buf, uint32_t len) {
  if (begin_ == end_) {
    // Large reads (tensor payloads) skip the copy.
    if (len >= kBufferBytes)
      return inner_->read(buf, len);
    begin_ = 0;
    if (spinUs_ > 0)
      spin();
    end_ = inner_->read(buffer_.data(), kBufferBytes);
    if (end_ == 0)
      return 0;
  }
  uint32_t n = std::min(len, end_ - begin_);
  std::memcpy(buf, buffer_.data() + begin_, n);
  begin_ += n;
  return n;
}

} // namespace monarch::executor
