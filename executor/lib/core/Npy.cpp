//===- Npy.cpp - Read and write numpy .npy files --------------------------===//
//
// The format: "\x93NUMPY", major and minor version bytes, a little-endian
// header length (2 bytes in 1.0, 4 in 2.0/3.0), and a Python dict literal
// with 'descr', 'fortran_order' and 'shape', padded so data starts 64-byte
// aligned.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

namespace monarch::executor {
namespace {

struct DescrEntry {
  const char *descr;
  const char *dtype;
  size_t bytes;
};

const DescrEntry kDescrs[] = {
    {"<f4", "float32", 4}, {"<f8", "float64", 8}, {"<f2", "float16", 2},
    {"|i1", "int8", 1},    {"<i4", "int32", 4},   {"<i8", "int64", 8},
    {"|u1", "uint8", 1},
};

Status bad(const std::string &what, const std::string &why) {
  return Status(StatusCode::InvalidArgument, what + ": " + why);
}

/// The text after `'key':` in the header dict, trimmed.
std::string valueOf(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  size_t colon = header.find(':', at);
  if (colon == std::string::npos)
    return "";
  size_t start = colon + 1;
  while (start < header.size() && std::isspace(header[start]))
    ++start;
  return header.substr(start);
}

} // namespace

size_t dtypeBytes(const std::string &dtype) {
  for (const DescrEntry &e : kDescrs)
    if (dtype == e.dtype)
      return e.bytes;
  return 0;
}

StatusOr<HostTensor> parseNpy(const std::string &bytes,
                              const std::string &what) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return bad(what, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad(what, "truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  } else {
    return bad(what, "unsupported .npy version " + std::to_string(major));
  }
  if (offset + headerLen > bytes.size())
    return bad(what, "truncated header");
  std::string header = bytes.substr(offset, headerLen);

  std::string descr = valueOf(header, "descr");
  if (descr.size() < 2 || (descr[0] != '\'' && descr[0] != '"'))
    return bad(what, "header has no 'descr'");
  descr = descr.substr(1, descr.find(descr[0], 1) - 1);
  HostTensor tensor;
  size_t itemBytes = 0;
  for (const DescrEntry &e : kDescrs)
    if (descr == e.descr ||
        (e.descr[0] == '|' && descr == std::string("<") + (e.descr + 1))) {
      tensor.dtype = e.dtype;
      itemBytes = e.bytes;
    }
  if (tensor.dtype.empty())
    return bad(what, "unsupported dtype '" + descr +
                         "' (expected little-endian float16/32/64, "
                         "int8/32/64 or uint8)");
  if (valueOf(header, "fortran_order").rfind("False", 0) != 0)
    return bad(what, "Fortran-ordered arrays are not supported");
  std::string shape = valueOf(header, "shape");
  if (shape.empty() || shape[0] != '(')
    return bad(what, "header has no 'shape'");
  size_t close = shape.find(')');
  if (close == std::string::npos)
    return bad(what, "malformed 'shape'");
  std::stringstream dims(shape.substr(1, close - 1));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t b = dim.find_first_not_of(" \t");
    if (b == std::string::npos)
      continue;
    char *end = nullptr;
    long long v = std::strtoll(dim.c_str() + b, &end, 10);
    if (v < 0 || (end && *end && !std::isspace(*end)))
      return bad(what, "malformed dimension '" + dim + "'");
    tensor.shape.push_back(v);
  }
  uint64_t dataBytes = itemBytes;
  for (int64_t d : tensor.shape)
    if (__builtin_mul_overflow(dataBytes, static_cast<uint64_t>(d), &dataBytes))
      return bad(what, "shape " + shape.substr(0, close + 1) + " overflows");
  size_t dataStart = offset + headerLen;
  if (bytes.size() - dataStart != dataBytes)
    return bad(what, "expected " + std::to_string(dataBytes) +
                         " data bytes for " + tensor.describe() + ", found " +
                         std::to_string(bytes.size() - dataStart));
  tensor.data = bytes.substr(dataStart);
  return tensor;
}

StatusOr<std::string> serializeNpy(const HostTensor &tensor) {
  const DescrEntry *entry = nullptr;
  for (const DescrEntry &e : kDescrs)
    if (tensor.dtype == e.dtype)
      entry = &e;
  if (!entry)
    return Status(StatusCode::InvalidArgument,
                  "cannot write dtype '" + tensor.dtype + "' as .npy");
  if (tensor.data.size() !=
      static_cast<size_t>(tensor.numElements()) * entry->bytes)
    return Status(StatusCode::InvalidArgument,
                  "tensor " + tensor.describe() + " holds " +
                      std::to_string(tensor.data.size()) + " bytes");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    shape += std::to_string(tensor.shape[i]) + ", ";
  if (tensor.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (tensor.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = std::string("{'descr': '") + entry->descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts 64-byte aligned; end with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out += tensor.data;
  return out;
}

StatusOr<HostTensor> readNpyFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(StatusCode::NotFound, "cannot open '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parseNpy(buffer.str(), path);
}

Status writeNpyFile(const std::string &path, const HostTensor &tensor) {
  auto bytes = serializeNpy(tensor);
  if (!bytes.isOk())
    return bytes.status().withContext(path);
  std::ofstream out(path, std::ios::binary);
  out << *bytes;
  if (!out)
    return Status(StatusCode::Internal, "cannot write '" + path + "'");
  return Status::ok();
}

} // namespace monarch::executor
