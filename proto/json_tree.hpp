#pragma once
// JsonTree: a JSON document read once into two flat arrays (its nodes, and the bytes of
// its keys and strings), for documents read field by field in bulk: the state of an
// upgrade in place (SPEC §16) is 1.3 MB at 1,000 services. nlohmann's DOM spends a
// std::map node and a std::string per member on it, and in a freshly exec'd process
// every one of those pages is a fault: ~65 ms, where this tree takes ~12.
//
// What it accepts is scan_json's, and so nlohmann's (a test and the state fuzz target
// compare them). The tree is read-only. Nodes are numbered in document order; a
// container's members follow it, and each node knows where its subtree ends, so the
// next sibling is one step away. Objects keep their members in document order and
// duplicates as written; find() takes a hint so that a reader walking the members in
// the order they were written finds each at the first look.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::proto {

class JsonTree {
public:
    using Index = std::uint32_t;
    enum class Kind : std::uint8_t {
        null,
        boolean,
        integer,
        unsigned_,
        floating,
        string,
        array,
        object
    };

    // The document in `text`, or why it is not JSON ("not JSON: parse error at byte 3: ...").
    static std::expected<JsonTree, std::string> parse(std::string_view text);

    static constexpr Index root() { return 0; }
    Kind kind(Index node) const { return m_nodes[node].kind; }
    bool is_object(Index node) const { return kind(node) == Kind::object; }
    bool is_array(Index node) const { return kind(node) == Kind::array; }
    bool is_null(Index node) const { return kind(node) == Kind::null; }
    // integer: negative whole numbers; unsigned_: the others; floating: with a fraction
    // or an exponent, or too large for 64 bits.
    bool is_number(Index node) const {
        return kind(node) == Kind::integer || kind(node) == Kind::unsigned_ ||
               kind(node) == Kind::floating;
    }

    // A container's members (objects) or elements (arrays): for (Index c = first(n);
    // c != end(n); c = next(c)).
    Index first(Index container) const { return container + 1; }
    Index end(Index node) const { return m_nodes[node].end; }
    Index next(Index node) const { return m_nodes[node].end; }
    std::size_t size(Index container) const { return m_nodes[container].count; }

    // An object member's key; empty for anything else.
    std::string_view key(Index member) const {
        return text_at(m_nodes[member].key, m_nodes[member].key_size);
    }
    // The member of `object` named `name` (the first one found), or end(object). The
    // search starts at `*hint` and wraps around; `*hint` is left at the member after the
    // one found. A hint is 0, or what an earlier find on the same object left.
    Index find(Index object, std::string_view name, Index* hint = nullptr) const;

    // A scalar's value; each requires the kind it reads.
    bool boolean(Index node) const { return m_nodes[node].value.flag; }
    std::int64_t integer(Index node) const { return m_nodes[node].value.integer; }
    std::uint64_t unsigned_integer(Index node) const { return m_nodes[node].value.whole; }
    // Any number, as a double.
    double number(Index node) const;
    std::string_view string(Index node) const {
        return text_at(m_nodes[node].value.text.at, m_nodes[node].value.text.size);
    }

private:
    friend class JsonTreeBuilder;
    struct Text {
        std::uint32_t at;
        std::uint32_t size;
    };
    struct Node {
        Kind kind = Kind::null;
        std::uint32_t key = 0;  // an object member's key in m_text
        std::uint32_t key_size = 0;
        Index end = 0;            // one past the last node of its subtree
        std::uint32_t count = 0;  // a container's members or elements
        union {
            bool flag;
            std::int64_t integer;
            std::uint64_t whole;
            double floating;
            Text text;
        } value{};
    };

    std::string_view text_at(std::uint32_t at, std::uint32_t size) const {
        return std::string_view(m_text).substr(at, size);
    }

    std::vector<Node> m_nodes;
    std::string m_text;  // every key and string, unescaped, one after another
};

}  // namespace pkit::proto
