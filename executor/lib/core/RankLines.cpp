//===- RankLines.cpp - Lines from many ranks, as a user reads them --------===//

#include "monarch/Executor/RankLines.h"

#include <algorithm>

namespace monarch::executor {

std::string rankPrefix(const std::vector<int> &ranks) {
  if (ranks.size() == 1)
    return "[rank " + std::to_string(ranks[0]) + "] ";
  std::string out = "[ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (i > 0)
      out += ",";
    out += std::to_string(ranks[i]);
    if (j > i)
      out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out + "] ";
}

std::vector<std::string>
foldRankLines(const std::vector<std::vector<std::string>> &perRank) {
  std::vector<std::string> out;
  size_t lines = 0;
  for (const auto &r : perRank)
    lines = std::max(lines, r.size());
  for (size_t k = 0; k < lines; ++k) {
    std::vector<std::pair<const std::string *, std::vector<int>>> groups;
    for (size_t r = 0; r < perRank.size(); ++r) {
      if (k >= perRank[r].size())
        continue;
      const std::string &text = perRank[r][k];
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto &g) { return *g.first == text; });
      if (it == groups.end())
        groups.push_back({&text, {static_cast<int>(r)}});
      else
        it->second.push_back(static_cast<int>(r));
    }
    for (const auto &[text, ranks] : groups)
      out.push_back(rankPrefix(ranks) + *text);
  }
  return out;
}

void LogFolder::add(int rank, int level, const std::string &line,
                    Clock::time_point now) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](Entry &e) {
      return e.level == level && e.line == line &&
             !std::binary_search(e.ranks.begin(), e.ranks.end(), rank);
    });
    if (it != pending_.end()) {
      it->ranks.insert(
          std::upper_bound(it->ranks.begin(), it->ranks.end(), rank), rank);
      return;
    }
    pending_.push_back({level, line, {rank}, now});
    // A flood is not held back: the oldest goes out at once.
    if (pending_.size() <= 4096)
      return;
  }
  flush(now, false);
}

void LogFolder::flush(Clock::time_point now, bool all) {
  std::vector<Entry> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!pending_.empty() &&
           (all || now - pending_.front().first >= window_ ||
            pending_.size() > 4096)) {
      out.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
  }
  for (const Entry &e : out)
    emit_(e.level, rankPrefix(e.ranks) + e.line);
}

} // namespace monarch::executor
