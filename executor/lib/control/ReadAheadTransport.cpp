//===- ReadAheadTransport.cpp - One recv per small frame ------------------===//
//
// See ReadAheadTransport.h.
//
//===----------------------------------------------------------------------===//
#include "ReadAheadTransport.h"

#include <algorithm>
#include <cstring>

namespace monarch::executor {

uint32_t ReadAheadTransport::read(uint8_t *buf, uint32_t len) {
  if (begin_ == end_) {
    // Large reads (tensor payloads) skip the copy.
    if (len >= kBufferBytes)
      return inner_->read(buf, len);
    begin_ = 0;
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
