#pragma once
// OutOfLine<T>: a part of the model that most services never set, kept on the heap
// only once it is written, so a service that leaves it alone pays one null pointer
// and no allocation (1,000 services in a few MiB).
//
// It behaves as a plain T value:
// - reading (*, ->) a part never written gives a shared, immutable T{};
// - set() keeps a value out of line only when it differs from T{}: the loader reads a
//   part as a plain T and sets it, so a section that is absent, or written with its
//   defaults, costs nothing;
// - edit() allocates a T{} on first use and returns it for writing;
// - a T converts to a part holding (and allocating) it, so `spec.storm = StormSpec{..}`
//   reads as it did when the part was a plain member;
// - a copy is deep (a copy of a null part is null); a moved-from part is null, that
//   is T{};
// - unlike a plain member, the value moves when the part is assigned: a reference
//   into it (`const ProbeSpec& p = *spec.health`) dangles once the spec is replaced;
// - == compares values: a null part equals an allocated one that holds T{}, so
//   reload (SPEC §8) sees no change when a file writes a section's defaults out.

#include <memory>
#include <utility>

namespace pkit::config {

template <class T>
class OutOfLine {
public:
    OutOfLine() = default;
    OutOfLine(T value) : m_value(std::make_unique<T>(std::move(value))) {}
    OutOfLine(const OutOfLine& other)
        : m_value(other.m_value ? std::make_unique<T>(*other.m_value) : nullptr) {}
    OutOfLine(OutOfLine&&) noexcept = default;
    OutOfLine& operator=(const OutOfLine& other) {
        if (this != &other) {
            m_value = other.m_value ? std::make_unique<T>(*other.m_value) : nullptr;
        }
        return *this;
    }
    OutOfLine& operator=(OutOfLine&&) noexcept = default;
    ~OutOfLine() = default;

    const T& operator*() const { return m_value ? *m_value : default_value(); }
    const T* operator->() const { return &**this; }

    // Holds `value`, allocating only when it is not T's default.
    void set(T value) {
        m_value = value == default_value() ? nullptr : std::make_unique<T>(std::move(value));
    }

    // The value for writing, allocated (as T{}) on first use.
    T& edit() {
        if (!m_value) {
            m_value = std::make_unique<T>();
        }
        return *m_value;
    }
    // Whether edit() (or a value) ever gave this part its own storage. Equality does
    // not depend on it; tests use it to check that unset parts cost no allocation.
    bool allocated() const { return m_value != nullptr; }

    friend bool operator==(const OutOfLine& a, const OutOfLine& b) {
        return (!a.m_value && !b.m_value) || *a == *b;
    }

private:
    // A function-local static: safe to read from other static initialisers.
    static const T& default_value() {
        static const T value{};
        return value;
    }

    std::unique_ptr<T> m_value;  // null: T{}
};

}  // namespace pkit::config
