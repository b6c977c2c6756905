#include "daemon/core/output_tail.hpp"

#include <algorithm>

namespace pkit::core {

void OutputTail::append(Stream stream, std::string_view text, double at) {
    if (m_max_lines == 0 || m_max_bytes == 0) {
        m_truncated = true;
        return;
    }
    if (text.size() > m_max_bytes) {
        text.remove_prefix(text.size() - m_max_bytes);
        m_truncated = true;
    }
    while (m_count > 0 && (m_count >= m_max_lines || m_bytes + text.size() > m_max_bytes)) {
        pop_front();
        m_truncated = true;
    }
    if (m_count == m_ring.size()) {
        grow();
    }
    TailLine& slot = m_ring[(m_head + m_count) % m_ring.size()];
    slot.stream = stream;
    slot.at = at;
    slot.text.assign(text);
    ++m_count;
    m_bytes += text.size();
}

void OutputTail::pop_front() {
    TailLine& front = m_ring[m_head];
    m_bytes -= front.text.size();
    front.text.clear();
    front.text.shrink_to_fit();
    m_head = (m_head + 1) % m_ring.size();
    --m_count;
}

// Doubles the ring (at most to max_lines), moving the lines to the front in order.
void OutputTail::grow() {
    std::size_t capacity = std::min(std::max<std::size_t>(8, m_ring.size() * 2), m_max_lines);
    std::vector<TailLine> bigger;
    bigger.reserve(capacity);
    for (std::size_t i = 0; i < m_count; ++i) {
        bigger.push_back(std::move(m_ring[(m_head + i) % m_ring.size()]));
    }
    bigger.resize(capacity);
    m_ring = std::move(bigger);
    m_head = 0;
}

void OutputTail::clear() {
    m_ring = {};
    m_head = 0;
    m_count = 0;
    m_bytes = 0;
    m_truncated = false;
}

}  // namespace pkit::core
