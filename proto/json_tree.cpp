#include "proto/json_tree.hpp"

#include <limits>

#include "proto/json_scan.hpp"

namespace pkit::proto {

// Fills a JsonTree from scan_json's calls: each value is a node, appended in document
// order; the containers still open are a stack of their indexes.
class JsonTreeBuilder : public JsonSax {
public:
    explicit JsonTreeBuilder(JsonTree& tree) : m_tree(tree) {}

    bool null() override { return scalar(JsonTree::Kind::null); }
    bool boolean(bool flag) override {
        JsonTree::Node* node = scalar_node(JsonTree::Kind::boolean);
        node->value.flag = flag;
        return true;
    }
    bool number_integer(number_integer_t number) override {
        JsonTree::Node* node = scalar_node(JsonTree::Kind::integer);
        node->value.integer = number;
        return true;
    }
    bool number_unsigned(number_unsigned_t number) override {
        JsonTree::Node* node = scalar_node(JsonTree::Kind::unsigned_);
        node->value.whole = number;
        return true;
    }
    bool number_float(number_float_t number, const string_t&) override {
        JsonTree::Node* node = scalar_node(JsonTree::Kind::floating);
        node->value.floating = number;
        return true;
    }
    bool string(string_t& text) override {
        JsonTree::Text stored{};
        if (!store(text, stored)) {
            return false;
        }
        JsonTree::Node* node = scalar_node(JsonTree::Kind::string);
        node->value.text = stored;
        return true;
    }
    bool binary(binary_t&) override { return false; }  // not in JSON text
    bool start_object(std::size_t) override { return open(JsonTree::Kind::object); }
    bool start_array(std::size_t) override { return open(JsonTree::Kind::array); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool key(string_t& name) override { return store(name, m_key); }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& error) override {
        // "[json.exception.parse_error.101] parse error at byte 3: ...": from "parse".
        std::string_view what = error.what();
        if (auto tag = what.find("] "); tag != std::string_view::npos) {
            what.remove_prefix(tag + 2);
        }
        m_error = "not JSON: " + std::string(what);
        return false;
    }

    const std::string& error() const { return m_error; }

private:
    // The node for the next value: its key (inside an object), counted in its parent.
    JsonTree::Node* append(JsonTree::Kind kind) {
        if (m_tree.m_nodes.size() >= std::numeric_limits<JsonTree::Index>::max()) {
            return nullptr;
        }
        JsonTree::Node& node = m_tree.m_nodes.emplace_back();
        node.kind = kind;
        node.end = static_cast<JsonTree::Index>(m_tree.m_nodes.size());
        if (!m_open.empty()) {
            JsonTree::Node& parent = m_tree.m_nodes[m_open.back()];
            ++parent.count;
            if (parent.kind == JsonTree::Kind::object) {
                node.key = m_key.at;
                node.key_size = m_key.size;
            }
        }
        return &node;
    }
    JsonTree::Node* scalar_node(JsonTree::Kind kind) {
        JsonTree::Node* node = append(kind);
        if (node == nullptr) {
            m_error = "too many values";
        }
        return node;
    }
    bool scalar(JsonTree::Kind kind) { return scalar_node(kind) != nullptr; }
    bool open(JsonTree::Kind kind) {
        if (scalar_node(kind) == nullptr) {
            return false;
        }
        m_open.push_back(static_cast<JsonTree::Index>(m_tree.m_nodes.size() - 1));
        return true;
    }
    bool close() {
        m_tree.m_nodes[m_open.back()].end = static_cast<JsonTree::Index>(m_tree.m_nodes.size());
        m_open.pop_back();
        return true;
    }
    bool store(const std::string& text, JsonTree::Text& stored) {
        if (m_tree.m_text.size() + text.size() > std::numeric_limits<std::uint32_t>::max()) {
            m_error = "too much text";
            return false;
        }
        stored = {static_cast<std::uint32_t>(m_tree.m_text.size()),
                  static_cast<std::uint32_t>(text.size())};
        m_tree.m_text.append(text);
        return true;
    }

    JsonTree& m_tree;
    std::vector<JsonTree::Index> m_open;
    JsonTree::Text m_key{};
    std::string m_error;
};

std::expected<JsonTree, std::string> JsonTree::parse(std::string_view text) {
    JsonTree tree;
    // A value takes at least two bytes of text with its separator, and its key or
    // string no more than it took in the text.
    tree.m_nodes.reserve(text.size() / 8);
    tree.m_text.reserve(text.size() / 2);
    JsonTreeBuilder builder(tree);
    if (!scan_json(text, builder) || tree.m_nodes.empty()) {
        return std::unexpected(builder.error().empty() ? "not JSON" : builder.error());
    }
    return tree;
}

JsonTree::Index JsonTree::find(Index object, std::string_view name, Index* hint) const {
    const Index stop = end(object);
    Index start = first(object);
    if (hint != nullptr && *hint > object && *hint < stop) {
        start = *hint;
    }
    auto found = [&](Index member) {
        if (hint != nullptr) {
            *hint = next(member);
        }
        return member;
    };
    for (Index member = start; member != stop; member = next(member)) {
        if (key(member) == name) {
            return found(member);
        }
    }
    for (Index member = first(object); member < start; member = next(member)) {
        if (key(member) == name) {
            return found(member);
        }
    }
    return stop;
}

double JsonTree::number(Index node) const {
    switch (kind(node)) {
        case Kind::integer:
            return static_cast<double>(integer(node));
        case Kind::unsigned_:
            return static_cast<double>(unsigned_integer(node));
        case Kind::floating:
            return m_nodes[node].value.floating;
        default:
            return 0.0;
    }
}

}  // namespace pkit::proto
