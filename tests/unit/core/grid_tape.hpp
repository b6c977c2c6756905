#pragma once
// An Archive for the state walk (daemon/core/persist.hpp) that keeps each field on a
// tape in the order walked, and reads them back in that order: the upgrade's
// hand-over without its file, for the state grid's `restore` row. The state file's
// own reader and writer are the shell's (tests/unit/shell/upgrade/).

#include <any>
#include <cstddef>
#include <string>
#include <vector>

#include "daemon/core/persist.hpp"

namespace pkit::core::test::grid {

class Tape {
public:
    bool loading() const { return m_loading; }
    int version() const { return k_state_version; }
    // Turns a written tape into one to read, from its start.
    void rewind() {
        m_loading = true;
        m_next = 0;
    }

    template <class T>
    void value(const char* name, T& v) {
        field(name, v);
    }
    template <class T>
    void time(const char* name, T& v) {
        field(name, v);
    }
    template <class E>
    void enumeration(const char* name, E& v, E last) {
        field(name, v);
        if (m_loading && static_cast<int>(v) > static_cast<int>(last)) {
            fail(name, "past the last value");
        }
    }
    template <class T>
    void times(const char* name, T& v) {
        field(name, v);
    }
    template <class T>
    void lines(const char* name, T& v) {
        field(name, v);
    }
    template <class Walk>
    void object(const char* name, Walk&& walk) {
        (void)name;
        walk(*this);
    }
    void fail(const char* name, const char* why) {
        m_errors.push_back(std::string(name) + ": " + why);
    }
    // What a load found wrong, "field: why" each.
    const std::vector<std::string>& errors() const { return m_errors; }

private:
    template <class T>
    void field(const char* name, T& v) {
        if (!m_loading) {
            m_fields.emplace_back(v);
            return;
        }
        const T* kept = m_next < m_fields.size() ? std::any_cast<T>(&m_fields[m_next]) : nullptr;
        ++m_next;
        if (kept == nullptr) {
            fail(name, "not the field written there");
            return;
        }
        v = *kept;
    }

    bool m_loading = false;
    std::vector<std::any> m_fields;
    std::size_t m_next = 0;
    std::vector<std::string> m_errors;
};

}  // namespace pkit::core::test::grid
