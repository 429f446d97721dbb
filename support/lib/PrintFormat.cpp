//===- PrintFormat.cpp - mc.debug_print's format and value text -----------===//

#include "monarch/Support/PrintFormat.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace monarch::printfmt {
namespace {

// numpy's summarisation: arrays of more than kThreshold elements show
// kEdgeItems at each end of every long dimension.
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f)
    return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

/// Round to nearest even; only used to test a decimal text read back.
uint16_t floatToHalf(float f) {
  uint32_t x = floatToBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  float a = std::fabs(f);
  if (std::isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) { // Subnormal (or zero).
    float q = std::nearbyint(a * std::ldexp(1.0f, 24));
    return sign | static_cast<uint16_t>(q);
  }
  int e;
  float m = std::frexp(a, &e);           // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(m * 2048.0f); // 11 significant bits
  if (q >= 2048.0f) {
    q /= 2;
    ++e;
  }
  uint32_t exp = static_cast<uint32_t>(e - 1 + 15);
  if (exp >= 0x1f)
    return sign | 0x7c00;
  return sign | static_cast<uint16_t>((exp << 10) |
                                      (static_cast<uint32_t>(q) & 0x3ff));
}

uint16_t floatToBf16(float f) {
  uint32_t x = floatToBits(f);
  if (std::isnan(f))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

double elementAsDouble(DType dtype, const char *p) {
  switch (dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return halfToFloat(v);
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return bitsToFloat(static_cast<uint32_t>(v) << 16);
  }
  case DType::I1:
  case DType::UI8:
    return static_cast<uint8_t>(*p);
  case DType::I8:
    return static_cast<int8_t>(*p);
  case DType::I16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  }
  return 0;
}

int64_t elementAsInt(DType dtype, const char *p) {
  switch (dtype) {
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default:
    return static_cast<int64_t>(elementAsDouble(dtype, p));
  }
}

/// The shortest scientific text ("d.ddde+XX") that reads back as `v` in
/// `dtype`.
std::string shortestScientific(DType dtype, double v) {
  char buf[64];
  if (dtype == DType::F64) {
    auto r =
        std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
  float f = static_cast<float>(v);
  if (dtype == DType::F32) {
    auto r =
        std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
  uint16_t want = dtype == DType::F16 ? floatToHalf(f) : floatToBf16(f);
  for (int p = 0; p < 9; ++p) {
    auto r = std::to_chars(buf, buf + sizeof buf, f,
                           std::chars_format::scientific, p);
    *r.ptr = 0;
    float back = std::strtof(buf, nullptr);
    uint16_t got = dtype == DType::F16 ? floatToHalf(back) : floatToBf16(back);
    if (got == want)
      return std::string(buf, r.ptr);
  }
  auto r =
      std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  return std::string(buf, r.ptr);
}

/// A float as numpy prints its scalars: positional between 1e-4 and a
/// bound that grows with the type's precision, scientific outside.
std::string floatText(DType dtype, double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  std::string sci = shortestScientific(dtype, v);
  bool negative = !sci.empty() && sci[0] == '-';
  size_t start = negative ? 1 : 0;
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = start; i < e; ++i)
    if (sci[i] != '.')
      digits += sci[i];
  int exp = std::atoi(sci.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  int bound = dtype == DType::F64 ? 16 : dtype == DType::F16 ? 3 : 7;
  bool zero = digits == "0";
  std::string out = negative ? "-" : "";
  if (!zero && (exp < -4 || exp >= bound)) {
    out += digits[0];
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char tail[16];
    std::snprintf(tail, sizeof tail, "e%c%02d", exp < 0 ? '-' : '+',
                  exp < 0 ? -exp : exp);
    return out + tail;
  }
  if (zero)
    return out + "0.0";
  if (exp >= 0) {
    std::string whole =
        digits.substr(0, std::min<size_t>(digits.size(), exp + 1));
    whole.append(static_cast<size_t>(exp + 1) - whole.size(), '0');
    std::string frac = digits.size() > static_cast<size_t>(exp + 1)
                           ? digits.substr(exp + 1)
                           : "0";
    return out + whole + "." + frac;
  }
  return out + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
}

/// Sign, decimal digits (no trailing zeros) and exponent of the shortest
/// text that reads back as `v` in `dtype` (finite `v`).
struct Digits {
  bool negative;
  std::string digits;
  int exp;
};
Digits shortestDigits(DType dtype, double v) {
  std::string sci = shortestScientific(dtype, v);
  Digits d{!sci.empty() && sci[0] == '-', "", 0};
  size_t e = sci.find('e');
  for (size_t i = d.negative ? 1 : 0; i < e; ++i)
    if (sci[i] != '.')
      d.digits += sci[i];
  d.exp = std::atoi(sci.c_str() + e + 1);
  while (d.digits.size() > 1 && d.digits.back() == '0')
    d.digits.pop_back();
  return d;
}

/// numpy's cap on the digits of an array element (print option precision).
constexpr int kArrayPrecision = 8;

/// Removes trailing zeros after the point ("2.50000000" -> "2.5", "1.0" ->
/// "1.").
std::string trimFraction(std::string s) {
  size_t dot = s.find('.');
  if (dot == std::string::npos)
    return s + ".";
  while (s.size() > dot + 1 && s.back() == '0')
    s.pop_back();
  return s;
}

/// Float array elements as numpy's default array printing writes them:
/// positional unless the values span more than 1e3 or leave [1e-4, 1e8)
/// (then all scientific), at most 8 digits after the point, the integer
/// parts right-aligned and the fractions padded on the right so that the
/// points line up ("[ 0.1   0.25 -3.  ]", "[1.e+10 1.e+00]").
void numpyFloatCells(DType dtype, const std::vector<double> &values,
                     std::vector<std::string> &out) {
  double maxv = 0, minv = 0;
  bool any = false;
  for (double v : values)
    if (std::isfinite(v) && v != 0) {
      double a = std::fabs(v);
      maxv = any ? std::max(maxv, a) : a;
      minv = any ? std::min(minv, a) : a;
      any = true;
    }
  bool scientific = any && (maxv >= 1e8 || minv < 1e-4 || maxv / minv > 1e3);
  // Per element: the part before the point (with the sign), the part after
  // it and, in scientific mode, the exponent.
  struct Parts {
    std::string head, frac;
    int exp = 0;
    bool finite = true;
  };
  std::vector<Parts> parts(values.size());
  size_t headW = 0, fracW = 0, expW = 2;
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    Parts &p = parts[i];
    if (!std::isfinite(v)) {
      p.finite = false;
      p.head = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
      continue;
    }
    Digits d = shortestDigits(dtype, v);
    std::string text;
    if (scientific) {
      bool zero = d.digits == "0";
      p.exp = zero ? 0 : d.exp;
      text = d.digits.substr(0, 1) + "." + d.digits.substr(1);
      if (d.digits.size() > 1 + kArrayPrecision) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*e", kArrayPrecision, std::fabs(v));
        std::string m(buf, std::strchr(buf, 'e'));
        p.exp = std::atoi(std::strchr(buf, 'e') + 1);
        text = m;
      }
      text = trimFraction(text);
      expW = std::max(expW, std::to_string(std::abs(p.exp)).size());
    } else {
      if (d.exp >= 0) {
        std::string whole =
            d.digits.substr(0, std::min<size_t>(d.digits.size(), d.exp + 1));
        whole.append(static_cast<size_t>(d.exp + 1) - whole.size(), '0');
        std::string frac = d.digits.size() > static_cast<size_t>(d.exp + 1)
                               ? d.digits.substr(d.exp + 1)
                               : "";
        text = whole + "." + frac;
      } else {
        text =
            "0." + std::string(static_cast<size_t>(-d.exp - 1), '0') + d.digits;
      }
      if (text.size() - text.find('.') - 1 > kArrayPrecision) {
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", kArrayPrecision, std::fabs(v));
        text = buf;
      }
      text = trimFraction(text);
      if (d.digits == "0")
        text = "0.";
    }
    size_t dot = text.find('.');
    p.head = (d.negative ? "-" : "") + text.substr(0, dot);
    p.frac = text.substr(dot + 1);
    headW = std::max(headW, p.head.size());
    fracW = std::max(fracW, p.frac.size());
  }
  size_t width = headW + 1 + fracW + (scientific ? 2 + expW : 0);
  out.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Parts &p = parts[i];
    if (!p.finite) {
      out[i] =
          std::string(width > p.head.size() ? width - p.head.size() : 0, ' ') +
          p.head;
      continue;
    }
    std::string cell =
        std::string(headW - p.head.size(), ' ') + p.head + "." + p.frac;
    if (scientific) {
      // numpy pads the fraction before the exponent with zeros.
      std::string e = std::to_string(std::abs(p.exp));
      cell += std::string(fracW - p.frac.size(), '0') + "e" +
              (p.exp < 0 ? "-" : "+") + std::string(expW - e.size(), '0') + e;
    } else {
      cell += std::string(fracW - p.frac.size(), ' ');
    }
    out[i] = std::move(cell);
  }
}

std::string defaultText(DType dtype, const char *p) {
  if (dtype == DType::I1)
    return *p ? "True" : "False";
  if (isFloatDType(dtype))
    return floatText(dtype, elementAsDouble(dtype, p));
  return std::to_string(elementAsInt(dtype, p));
}

struct Spec {
  char fill = ' ';
  char align = 0; // '<', '>', '^', '=' or 0 (right for numbers)
  char sign = '-';
  bool zeroPad = false;
  int width = 0;
  int precision = -1;
  char type = 0;
};

/// A format the user wrote wrong (ErrorKind::Program).
Status malformed(std::string message) {
  return Status(StatusCode::InvalidArgument, std::move(message), {},
                ErrorKind::Program);
}

Status parseSpec(std::string_view s, Spec &spec) {
  size_t i = 0;
  auto isAlign = [](char c) {
    return c == '<' || c == '>' || c == '^' || c == '=';
  };
  if (s.size() >= 2 && isAlign(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && isAlign(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' '))
    spec.sign = s[i++];
  if (i < s.size() && s[i] == '0') {
    spec.zeroPad = true;
    ++i;
  }
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    spec.width = spec.width * 10 + (s[i++] - '0');
    if (spec.width > 1000) {
      return malformed("width in '" + std::string(s) + "' is too large");
    }
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || s[i] < '0' || s[i] > '9') {
      return malformed("format spec '" + std::string(s) +
                       "' has a '.' without digits");
    }
    spec.precision = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      spec.precision = spec.precision * 10 + (s[i++] - '0');
      if (spec.precision > 100) {
        return malformed("precision in '" + std::string(s) + "' is too large");
      }
    }
  }
  if (i < s.size() && std::strchr("eEfFgG%d", s[i]) && s[i] != 0)
    spec.type = s[i++];
  if (i != s.size()) {
    // (Python's format() may take it: what this printer lacks.)
    return Status(StatusCode::InvalidArgument,
                  "unsupported format spec '" + std::string(s) +
                      "' (supported: [[fill]align][sign][0][width][.precision]"
                      "[e|E|f|F|g|G|%|d])",
                  {}, ErrorKind::Unsupported);
  }
  return Status();
}

std::string applySpec(DType dtype, const char *p, const Spec &spec) {
  std::string body;
  bool negative = false;
  if (spec.type == 0 && spec.precision < 0) {
    body = defaultText(dtype, p);
  } else if (spec.type == 'd' ||
             (spec.type == 0 && !isFloatDType(dtype) && dtype != DType::I1)) {
    int64_t v =
        isFloatDType(dtype)
            ? static_cast<int64_t>(std::nearbyint(elementAsDouble(dtype, p)))
            : elementAsInt(dtype, p);
    body = std::to_string(v);
  } else {
    double v = elementAsDouble(dtype, p);
    char type = spec.type ? spec.type : 'g';
    int precision = spec.precision >= 0 ? spec.precision : 6;
    char buf[512];
    if (type == '%') {
      std::snprintf(buf, sizeof buf, "%.*f%%", precision, v * 100);
    } else {
      char fmt[8] = {'%', '.', '*', type, 0};
      std::snprintf(buf, sizeof buf, fmt, precision, v);
    }
    body = buf;
  }
  if (!body.empty() && body[0] == '-') {
    negative = true;
    body.erase(0, 1);
  }
  std::string sign = negative           ? "-"
                     : spec.sign == '+' ? "+"
                     : spec.sign == ' ' ? " "
                                        : "";
  size_t len = sign.size() + body.size();
  size_t width = static_cast<size_t>(spec.width);
  if (len >= width)
    return sign + body;
  size_t pad = width - len;
  char align = spec.align ? spec.align : (spec.zeroPad ? '=' : '>');
  char fill = spec.align ? spec.fill : (spec.zeroPad ? '0' : ' ');
  switch (align) {
  case '<':
    return sign + body + std::string(pad, fill);
  case '^':
    return std::string(pad / 2, fill) + sign + body +
           std::string(pad - pad / 2, fill);
  case '=':
    return sign + std::string(pad, fill) + body;
  default:
    return std::string(pad, fill) + sign + body;
  }
}

/// Renders dimension `dim` of an array whose elements are already text.
struct ArrayPrinter {
  const std::vector<int64_t> &shape;
  const std::vector<std::string> &cells; // Row-major, every element.
  std::vector<int64_t> strides;
  bool summarise;
  size_t width = 0;

  std::vector<int64_t> shown(int64_t n) const {
    std::vector<int64_t> idx;
    if (summarise && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i)
        idx.push_back(i);
      idx.push_back(-1); // The ellipsis.
      for (int64_t i = n - kEdgeItems; i < n; ++i)
        idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i)
        idx.push_back(i);
    }
    return idx;
  }

  void measure(size_t dim, int64_t base) {
    for (int64_t i : shown(shape[dim])) {
      if (i < 0)
        continue;
      int64_t at = base + i * strides[dim];
      if (dim + 1 == shape.size())
        width = std::max(width, cells[at].size());
      else
        measure(dim + 1, at);
    }
  }

  std::string render(size_t dim, int64_t base) const {
    size_t rank = shape.size();
    std::string sep = dim + 1 == rank ? " "
                                      : std::string(rank - dim - 1, '\n') +
                                            std::string(dim + 1, ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t i : shown(shape[dim])) {
      if (!first)
        out += sep;
      first = false;
      if (i < 0) {
        out += "...";
        continue;
      }
      int64_t at = base + i * strides[dim];
      if (dim + 1 == rank) {
        const std::string &c = cells[at];
        out += std::string(width > c.size() ? width - c.size() : 0, ' ') + c;
      } else {
        out += render(dim + 1, at);
      }
    }
    return out + "]";
  }
};

} // namespace

Status validSpec(std::string_view spec) {
  Spec s;
  return parseSpec(spec, s);
}

Status parse(std::string_view format, size_t numValues,
             std::vector<Piece> &pieces) {
  pieces.clear();
  Piece cur;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        cur.literal += '}';
        ++i;
        continue;
      }
      return malformed("single '}' in the format at offset " +
                       std::to_string(i) + " (write '}}' for a brace)");
    }
    if (c != '{') {
      cur.literal += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      cur.literal += '{';
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string_view::npos) {
      return malformed("unclosed '{' in the format at offset " +
                       std::to_string(i));
    }
    std::string_view field = format.substr(i + 1, close - i - 1);
    size_t colon = field.find(':');
    std::string_view index = field.substr(0, colon);
    std::string_view spec = colon == std::string_view::npos
                                ? std::string_view()
                                : field.substr(colon + 1);
    if (index.empty() || index.size() > 6 ||
        index.find_first_not_of("0123456789") != std::string_view::npos) {
      return malformed("format field '{" + std::string(field) +
                       "}' does not name a value by position");
    }
    int value = std::atoi(std::string(index).c_str());
    if (static_cast<size_t>(value) >= numValues) {
      return malformed("format field '{" + std::string(field) +
                       "}' names value " + std::to_string(value) +
                       ", but there are " + std::to_string(numValues));
    }
    if (Status bad = validSpec(spec); !bad)
      return bad;
    cur.value = value;
    cur.spec = std::string(spec);
    pieces.push_back(std::move(cur));
    cur = Piece();
    i = close;
  }
  if (!cur.literal.empty())
    pieces.push_back(std::move(cur));
  return Status();
}

std::string formatValue(const ValueView &value, std::string_view specText) {
  Spec spec;
  if (!parseSpec(specText, spec))
    spec = Spec();
  size_t elem = dtypeSize(value.dtype);
  const char *p = static_cast<const char *>(value.data);
  if (value.shape.empty())
    return applySpec(value.dtype, p, spec);
  int64_t count = 1;
  for (int64_t d : value.shape)
    count *= d;
  if (count == 0)
    return "[]";
  bool summarise = count > kThreshold;
  std::vector<int64_t> strides(value.shape.size(), 1);
  for (size_t d = value.shape.size() - 1; d > 0; --d)
    strides[d - 1] = strides[d] * value.shape[d];
  // Text of the elements shown (all of them when not summarised).
  std::vector<std::string> cells(static_cast<size_t>(count));
  ArrayPrinter printer{value.shape, cells, strides, summarise};
  bool numpyFloats = isFloatDType(value.dtype) && specText.empty();
  std::vector<int64_t> shownAt;
  for (int64_t i = 0; i < count; ++i) {
    bool visible = true;
    if (summarise) {
      int64_t rest = i;
      for (size_t d = 0; d < value.shape.size(); ++d) {
        int64_t at = rest / strides[d];
        rest %= strides[d];
        int64_t n = value.shape[d];
        if (n > 2 * kEdgeItems && at >= kEdgeItems && at < n - kEdgeItems)
          visible = false;
      }
    }
    if (visible)
      cells[i] = applySpec(value.dtype, p + i * elem, spec);
    if (visible && numpyFloats)
      shownAt.push_back(i);
  }
  if (numpyFloats) {
    std::vector<double> values;
    for (int64_t i : shownAt)
      values.push_back(elementAsDouble(value.dtype, p + i * elem));
    std::vector<std::string> text;
    numpyFloatCells(value.dtype, values, text);
    for (size_t k = 0; k < shownAt.size(); ++k)
      cells[shownAt[k]] = std::move(text[k]);
  }
  printer.measure(0, 0);
  return printer.render(0, 0);
}

std::string format(const std::vector<Piece> &pieces,
                   const std::vector<ValueView> &values) {
  std::string out;
  for (const Piece &piece : pieces) {
    out += piece.literal;
    if (piece.value >= 0 && static_cast<size_t>(piece.value) < values.size())
      out += formatValue(values[piece.value], piece.spec);
  }
  return out;
}

} // namespace monarch::printfmt
