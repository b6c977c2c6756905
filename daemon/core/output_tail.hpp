#pragma once
// The bounded output tail of one run (SPEC §4): the newest lines, at most `max_lines`
// of them and at most `max_bytes` of line text (newlines not counted), oldest dropped.
// A ring over a vector that grows as lines arrive: an empty tail costs no allocation,
// which matters with a thousand services holding two tails each.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/types.hpp"

namespace pkit::core {

struct TailLine {
    Stream stream = Stream::stdout_;
    double at = 0.0;
    std::string text;
};

class OutputTail {
public:
    OutputTail() = default;
    OutputTail(std::size_t max_lines, std::size_t max_bytes)
        : m_max_lines(max_lines), m_max_bytes(max_bytes) {}

    // Appends one line, dropping the oldest to stay within bounds. A single line larger
    // than max_bytes keeps only its last max_bytes bytes.
    void append(Stream stream, std::string_view text, double at);

    std::size_t size() const { return m_count; }
    bool empty() const { return m_count == 0; }
    // The i-th line, oldest first.
    const TailLine& at(std::size_t i) const { return m_ring[(m_head + i) % m_ring.size()]; }
    bool truncated() const { return m_truncated; }
    std::size_t bytes() const { return m_bytes; }
    // Releases everything, memory included.
    void clear();
    // Walks the lines, oldest first, for the upgrade's state file (persist.hpp).
    template <class Archive>
    void persist(Archive& a);

private:
    void pop_front();
    void grow();

    std::size_t m_max_lines = 1000;
    std::size_t m_max_bytes = 256 * 1024;
    std::size_t m_bytes = 0;
    std::size_t m_head = 0;
    std::size_t m_count = 0;
    bool m_truncated = false;
    std::vector<TailLine> m_ring;
};

}  // namespace pkit::core
