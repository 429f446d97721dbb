//===- PlanGraph.cpp - Pictures of a plan (SVG) ---------------------------===//

#include "monarch/Plan/PlanGraph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace monarch::plan {
namespace {

constexpr int kLabelW = 96; // Lane names on the left.
constexpr int kColW = 112;  // One instruction.
constexpr int kBoxW = 102;
constexpr int kBoxH = 34;
constexpr int kLaneH = 64;
constexpr int kTitleH = 30;

std::string esc(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      // Control characters are not XML.
      if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t')
        out += c;
    }
  }
  return out;
}

std::string header(int width, int height) {
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " "
     << height << "\" font-family=\"monospace\" font-size=\"11\">\n"
     << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" "
        "refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
        "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\"/>"
        "</marker></defs>\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  return os.str();
}

const char *colorOf(InstrKind kind) {
  switch (kind) {
  case InstrKind::Launch:
    return "#9ecae9";
  case InstrKind::Send:
  case InstrKind::Recv:
    return "#ffbe7d";
  case InstrKind::Collective:
    return "#d4a6c8";
  case InstrKind::Wait:
    return "#d7d2cf";
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
    return "#8cd17d";
  case InstrKind::StateBuffer:
    return "#86bcb6";
  case InstrKind::PrintBuffers:
    return "#f1ce63";
  }
  return "#ffffff";
}

/// The short label of an instruction (its first line in the box).
std::string shortName(const ExecutionPlan &plan, const Instruction &in) {
  switch (in.kind) {
  case InstrKind::Launch: {
    std::string name =
        in.launch.kernel >= 0 &&
                in.launch.kernel < static_cast<int32_t>(plan.kernels.size())
            ? plan.kernels[in.launch.kernel].name
            : "?";
    size_t dot = name.rfind('.');
    return "launch " + (dot == std::string::npos ? name : name.substr(dot + 1));
  }
  case InstrKind::Send:
    return "send -> " + std::to_string(in.p2p.peer);
  case InstrKind::Recv:
    return "recv <- " + std::to_string(in.p2p.peer);
  case InstrKind::Collective: {
    std::string text = collectiveKindName(in.collective.kind);
    if (in.collective.reduction)
      text += std::string(" ") + reductionKindName(*in.collective.reduction);
    return text;
  }
  case InstrKind::Wait:
    return "wait";
  case InstrKind::FeedBuffer:
    return "feed " + std::to_string(in.io.index);
  case InstrKind::FetchBuffer:
    return "fetch " + std::to_string(in.io.index) +
           (in.io.keepOnly ? " keep" : "");
  case InstrKind::StateBuffer:
    return "state " + in.stateBuffer.state;
  case InstrKind::PrintBuffers:
    return "debug_print";
  }
  return "?";
}

/// The buffers an instruction touches.
std::vector<Buffer> buffersOf(const Instruction &in) {
  switch (in.kind) {
  case InstrKind::Launch: {
    std::vector<Buffer> out = in.launch.ins;
    out.insert(out.end(), in.launch.outs.begin(), in.launch.outs.end());
    return out;
  }
  case InstrKind::Send:
  case InstrKind::Recv:
    return {in.p2p.buffer};
  case InstrKind::Collective:
    return {in.collective.input, in.collective.output};
  case InstrKind::Wait:
    return {};
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
    return {in.io.buffer};
  case InstrKind::StateBuffer:
    return {in.stateBuffer.buffer};
  case InstrKind::PrintBuffers:
    return in.print.buffers;
  }
  return {};
}

std::string kb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(bytes) / 1024);
  return buf;
}

} // namespace

std::string planGraphSvg(const ExecutionPlan &plan) {
  // Height: per step plan a title, the controller's lane and one lane per
  // rank; width: the longest rank program.
  size_t columns = 1;
  int height = 10;
  for (const StepPlan &step : plan.plans) {
    for (const RankProgram &p : step.programs)
      columns = std::max(columns, p.instructions.size());
    height += kTitleH + kLaneH * (1 + static_cast<int>(step.programs.size()));
  }
  int width = kLabelW + static_cast<int>(columns) * kColW + 20;
  std::ostringstream os;
  os << header(width, height);
  int y0 = 10;
  for (const StepPlan &step : plan.plans) {
    os << "<g class=\"plan\"><text x=\"8\" y=\"" << y0 + 18
       << "\" font-size=\"13\" font-weight=\"bold\">plan @" << esc(step.symbol)
       << " on @" << esc(step.mesh) << " (" << step.programs.size()
       << " ranks)</text>\n";
    int controllerY = y0 + kTitleH;
    std::map<int64_t, int> laneOf; // rank -> lane top
    std::vector<const RankProgram *> programs;
    for (const RankProgram &p : step.programs)
      programs.push_back(&p);
    std::sort(programs.begin(), programs.end(),
              [](auto *a, auto *b) { return a->rank < b->rank; });
    for (size_t i = 0; i < programs.size(); ++i)
      laneOf[programs[i]->rank] =
          controllerY + kLaneH * static_cast<int>(i + 1);
    auto boxX = [](size_t pos) {
      return kLabelW + static_cast<int>(pos) * kColW;
    };
    auto midY = [](int lane) { return lane + 8 + kBoxH / 2; };
    // Lanes.
    os << "<text x=\"8\" y=\"" << midY(controllerY) + 4
       << "\" font-weight=\"bold\">controller</text>\n"
       << "<line x1=\"" << kLabelW << "\" y1=\"" << midY(controllerY)
       << "\" x2=\"" << width - 10 << "\" y2=\"" << midY(controllerY)
       << "\" stroke=\"#999\" stroke-dasharray=\"2,3\"/>\n";
    for (const RankProgram *p : programs)
      os << "<text x=\"8\" y=\"" << midY(laneOf[p->rank]) + 4
         << "\" font-weight=\"bold\">rank " << p->rank << "</text>\n";

    // Edges under the boxes: control (dashed), point to point, collectives.
    std::ostringstream edges;
    // (communicator, from, to) -> positions of sends / receives in order.
    std::map<std::tuple<int32_t, int64_t, int64_t>, std::vector<size_t>> sends,
        recvs;
    // communicator -> rank -> positions of its collectives in order.
    std::map<int32_t, std::map<int64_t, std::vector<size_t>>> collectives;
    for (const RankProgram *p : programs)
      for (size_t i = 0; i < p->instructions.size(); ++i) {
        const Instruction &in = p->instructions[i];
        int lane = laneOf[p->rank];
        int cx = boxX(i) + kBoxW / 2;
        if (in.kind == InstrKind::Send)
          sends[{in.p2p.communicator, p->rank, in.p2p.peer}].push_back(i);
        else if (in.kind == InstrKind::Recv)
          recvs[{in.p2p.communicator, in.p2p.peer, p->rank}].push_back(i);
        else if (in.kind == InstrKind::Collective)
          collectives[in.collective.communicator][p->rank].push_back(i);
        else if (in.kind == InstrKind::FeedBuffer)
          edges << "<line class=\"control\" x1=\"" << cx << "\" y1=\""
                << midY(controllerY) << "\" x2=\"" << cx << "\" y2=\""
                << lane + 8 << "\" stroke=\"#3a7d2c\" stroke-dasharray=\"5,4\" "
                << "marker-end=\"url(#arrow)\"/>\n";
        else if (in.kind == InstrKind::FetchBuffer && !in.io.keepOnly)
          edges << "<line class=\"control\" x1=\"" << cx << "\" y1=\""
                << lane + 8 << "\" x2=\"" << cx << "\" y2=\""
                << midY(controllerY) << "\" stroke=\"#3a7d2c\" "
                << "stroke-dasharray=\"5,4\" marker-end=\"url(#arrow)\"/>\n";
      }
    for (auto &[key, from] : sends) {
      auto [comm, src, dst] = key;
      auto it = recvs.find(key);
      if (it == recvs.end() || !laneOf.count(src) || !laneOf.count(dst))
        continue;
      for (size_t k = 0; k < from.size() && k < it->second.size(); ++k) {
        int sy = laneOf[src], dy = laneOf[dst];
        bool down = dy > sy;
        edges << "<line class=\"p2p\" x1=\"" << boxX(from[k]) + kBoxW / 2
              << "\" y1=\"" << (down ? sy + 8 + kBoxH : sy + 8) << "\" x2=\""
              << boxX(it->second[k]) + kBoxW / 2 << "\" y2=\""
              << (down ? dy + 8 : dy + 8 + kBoxH)
              << "\" stroke=\"#e15759\" stroke-width=\"1.5\" "
              << "marker-end=\"url(#arrow)\"/>\n";
      }
    }
    for (auto &[comm, byRank] : collectives) {
      size_t count = 0;
      for (auto &[rank, positions] : byRank)
        count = std::max(count, positions.size());
      for (size_t k = 0; k < count; ++k) {
        std::string points;
        for (auto &[rank, positions] : byRank)
          if (k < positions.size())
            points += std::to_string(boxX(positions[k]) + kBoxW / 2) + "," +
                      std::to_string(midY(laneOf[rank])) + " ";
        edges << "<polyline class=\"collective\" points=\"" << points
              << "\" fill=\"none\" stroke=\"#8b4f84\" stroke-width=\"2\"/>\n";
      }
    }
    os << edges.str();

    // Boxes.
    for (const RankProgram *p : programs)
      for (size_t i = 0; i < p->instructions.size(); ++i) {
        const Instruction &in = p->instructions[i];
        int x = boxX(i), y = laneOf[p->rank] + 8;
        std::string detail;
        if (std::optional<int64_t> s = in.stream())
          detail += "stream " + std::to_string(*s);
        if (std::optional<int64_t> g = in.group())
          detail += " group " + std::to_string(*g);
        std::string where = in.loc.file.empty() ? "" : in.loc.str();
        std::string tip = "rank " + std::to_string(p->rank) + " #" +
                          std::to_string(i) + " " + shortName(plan, in);
        if (!detail.empty())
          tip += " (" + detail + ")";
        for (const Buffer &b : buffersOf(in))
          tip += "\n  " + b.str();
        if (!where.empty())
          tip += "\nat " + where;
        os << "<g class=\"instr\"><title>" << esc(tip) << "</title><rect x=\""
           << x << "\" y=\"" << y << "\" width=\"" << kBoxW << "\" height=\""
           << kBoxH << "\" rx=\"4\" fill=\"" << colorOf(in.kind)
           << "\" stroke=\"#555\"/><text x=\"" << x + 4 << "\" y=\"" << y + 14
           << "\">" << esc(shortName(plan, in)) << "</text><text x=\"" << x + 4
           << "\" y=\"" << y + 28 << "\" font-size=\"9\" fill=\"#333\">"
           << esc(detail.empty() ? where.substr(where.rfind('/') + 1) : detail)
           << "</text></g>\n";
      }
    os << "</g>\n";
    y0 += kTitleH + kLaneH * (1 + static_cast<int>(programs.size()));
  }
  os << "</svg>\n";
  return os.str();
}

std::string memoryPlotSvg(const ExecutionPlan &plan) {
  constexpr int kPanelW = 640, kPanelH = 180, kPad = 60, kGap = 46;
  int panels = 0;
  for (const StepPlan &step : plan.plans)
    panels += static_cast<int>(step.programs.size());
  int width = kPanelW + 2 * kPad;
  int height = 20 + std::max(panels, 1) * (kPanelH + kGap);
  std::ostringstream os;
  os << header(width, height);
  int y0 = 20;
  for (const StepPlan &step : plan.plans)
    for (const RankProgram &p : step.programs) {
      size_t n = std::max<size_t>(p.instructions.size(), 1);
      int64_t arena = std::max<int64_t>(p.arenaBytes, 1);
      auto xAt = [&](size_t pos) {
        return kPad + static_cast<double>(pos) * kPanelW / n;
      };
      auto yAt = [&](int64_t bytes) {
        return y0 + kPanelH - static_cast<double>(bytes) * kPanelH / arena;
      };
      os << "<g class=\"rank\"><text x=\"" << kPad << "\" y=\"" << y0 - 6
         << "\" font-weight=\"bold\">plan @" << esc(step.symbol) << " rank "
         << p.rank << ": arena " << kb(p.arenaBytes) << ", peak "
         << kb(p.peakBytes) << "</text>\n"
         << "<rect x=\"" << kPad << "\" y=\"" << y0 << "\" width=\"" << kPanelW
         << "\" height=\"" << kPanelH
         << "\" fill=\"#fafafa\" stroke=\"#888\"/>\n";
      // Each buffer from its first to its last use.
      std::map<std::pair<int64_t, int64_t>, std::pair<size_t, size_t>> live;
      std::map<std::pair<int64_t, int64_t>, std::string> names;
      for (size_t i = 0; i < p.instructions.size(); ++i)
        for (const Buffer &b : buffersOf(p.instructions[i])) {
          std::pair<int64_t, int64_t> key{b.offset, b.sizeInBytes()};
          auto [it, inserted] = live.try_emplace(key, i, i);
          if (!inserted)
            it->second.second = i;
          names.try_emplace(key, b.str());
        }
      // Tableau 10: SVG 1.1 colours (hsl() is CSS3, which some renderers
      // do not read).
      static const char *const kPalette[] = {
          "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
      unsigned hue = 0;
      for (auto &[key, span] : live) {
        auto [offset, bytes] = key;
        double x1 = xAt(span.first), x2 = xAt(span.second + 1);
        double top = yAt(offset + bytes), bottom = yAt(offset);
        const char *fill = kPalette[hue++ % 10];
        os << "<rect class=\"buffer\" x=\"" << x1 << "\" y=\"" << top
           << "\" width=\"" << std::max(x2 - x1, 1.0) << "\" height=\""
           << std::max(bottom - top, 1.0) << "\" fill=\"" << fill
           << "\" fill-opacity=\"0.75\" stroke=\"#333\" stroke-width=\"0.3\">"
           << "<title>" << esc(names[key]) << " (" << bytes
           << " bytes), instructions " << span.first << "-" << span.second
           << "</title></rect>\n";
      }
      if (p.peakBytes > 0) {
        double py = yAt(p.peakBytes);
        os << "<line class=\"peak\" x1=\"" << kPad << "\" y1=\"" << py
           << "\" x2=\"" << kPad + kPanelW << "\" y2=\"" << py
           << "\" stroke=\"#d62728\" stroke-dasharray=\"6,3\"/><text x=\""
           << kPad + kPanelW + 4 << "\" y=\"" << py + 4
           << "\" fill=\"#d62728\" font-size=\"10\">peak</text>\n";
      }
      os << "<text x=\"" << kPad - 4 << "\" y=\"" << y0 + kPanelH
         << "\" text-anchor=\"end\" font-size=\"9\">0</text><text x=\""
         << kPad - 4 << "\" y=\"" << y0 + 9
         << "\" text-anchor=\"end\" font-size=\"9\">" << kb(p.arenaBytes)
         << "</text><text x=\"" << kPad + kPanelW / 2 << "\" y=\""
         << y0 + kPanelH + 14
         << "\" text-anchor=\"middle\" font-size=\"9\">instruction (issue "
            "order, 0-"
         << n - 1 << ")</text></g>\n";
      y0 += kPanelH + kGap;
    }
  os << "</svg>\n";
  return os.str();
}

} // namespace monarch::plan
