// JsonTree: the flat document the upgrade's state is read into. Built back into an
// nlohmann value it equals nlohmann's own parse of the same text; it refuses what
// nlohmann refuses; find() finds members in any order, with or without a hint.

#include "tests/unit/proto/proto_doctest.hpp"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/json_tree.hpp"

using namespace pkit::proto;
using nlohmann::json;

namespace {

// "]}" `levels` times: what closes {"a":[ opened as many times.
std::string repeat_closers(std::size_t levels) {
    std::string out;
    out.reserve(2 * levels);
    for (std::size_t i = 0; i < levels; ++i) {
        out += "]}";
    }
    return out;
}

json to_json(const JsonTree& tree, JsonTree::Index node) {
    switch (tree.kind(node)) {
        case JsonTree::Kind::null:
            return nullptr;
        case JsonTree::Kind::boolean:
            return tree.boolean(node);
        case JsonTree::Kind::integer:
            return tree.integer(node);
        case JsonTree::Kind::unsigned_:
            return tree.unsigned_integer(node);
        case JsonTree::Kind::floating:
            return tree.number(node);
        case JsonTree::Kind::string:
            return std::string(tree.string(node));
        case JsonTree::Kind::array: {
            json list = json::array();
            for (auto e = tree.first(node); e != tree.end(node); e = tree.next(e)) {
                list.push_back(to_json(tree, e));
            }
            return list;
        }
        case JsonTree::Kind::object: {
            json object = json::object();
            for (auto m = tree.first(node); m != tree.end(node); m = tree.next(m)) {
                object[std::string(tree.key(m))] = to_json(tree, m);
            }
            return object;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("a tree holds what nlohmann reads from the same text") {
    const std::vector<std::string> texts = {
        "0",
        "-7",
        "18446744073709551615",
        "18446744073709551616",
        "1.5e3",
        "\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\n\"",
        "true",
        "null",
        "[]",
        "{}",
        "[1, [2, [3, []]], {\"a\": {}}, \"x\"]",
        R"({"b": 1, "a": [true, false, null], "c": {"d": {"e": -1}, "f": 2.25}, "g": ""})",
        R"({"services": {"api": {"pid": 100, "tail": {"lines": [{"at": 1.5, "text": "hi"}]}}, "db": {"pid": 0}}})",
    };
    for (const std::string& text : texts) {
        CAPTURE(text);
        auto tree = JsonTree::parse(text);
        REQUIRE_MESSAGE(tree.has_value(), tree.error());
        CHECK(to_json(*tree, JsonTree::root()) == json::parse(text));
    }
}

TEST_CASE("a tree refuses what is not JSON, saying where") {
    for (const std::string text :
         {"", "{", "[1,]", "{\"a\" 1}", "{\"a\": 01}", "\"\\x\"", "\"\xff\"", "[1] 2", "nul"}) {
        CAPTURE(text);
        CHECK(json::parse(text, nullptr, false).is_discarded());
        auto tree = JsonTree::parse(text);
        REQUIRE_FALSE(tree.has_value());
        CHECK(tree.error().starts_with("not JSON"));
    }
    CHECK(JsonTree::parse("[1,]").error() ==
          "not JSON: parse error at byte 3: syntax error: a value expected");
}

TEST_CASE("find looks a member up in any order; a hint makes reading in order one look") {
    auto tree = JsonTree::parse(R"({"a": 1, "b": {"x": 2, "a": 9}, "c": 3, "c": 4})");
    REQUIRE(tree.has_value());
    const auto root = JsonTree::root();
    CHECK(tree->size(root) == 4);  // duplicates are kept as written
    auto value = [&](JsonTree::Index member) { return tree->unsigned_integer(member); };
    // Without a hint, from the first member: the first duplicate, not a nested key.
    CHECK(value(tree->find(root, "a")) == 1);
    CHECK(value(tree->find(root, "c")) == 3);
    CHECK(tree->find(root, "x") == tree->end(root));
    CHECK(tree->find(root, "") == tree->end(root));
    // With a hint: in order, each found where the last one ended; out of order, found by
    // wrapping around.
    JsonTree::Index hint = 0;
    CHECK(value(tree->find(root, "a", &hint)) == 1);
    const auto b = tree->find(root, "b", &hint);
    REQUIRE(tree->is_object(b));
    CHECK(value(tree->find(b, "a")) == 9);
    CHECK(value(tree->find(root, "c", &hint)) == 3);
    CHECK(value(tree->find(root, "c", &hint)) == 4);  // the member after the hint first
    CHECK(hint == tree->end(root));
    CHECK(value(tree->find(root, "a", &hint)) == 1);  // wrapped around
    CHECK(tree->find(root, "nothing", &hint) == tree->end(root));
    // Members and elements, and the key of what is not a member.
    auto list = JsonTree::parse(R"([{"k": "v"}, [], 3])");
    REQUIRE(list.has_value());
    std::vector<JsonTree::Kind> kinds;
    for (auto e = list->first(root); e != list->end(root); e = list->next(e)) {
        kinds.push_back(list->kind(e));
        CHECK(list->key(e).empty());
    }
    CHECK(kinds ==
          std::vector{JsonTree::Kind::object, JsonTree::Kind::array, JsonTree::Kind::unsigned_});
    CHECK(list->string(list->find(list->first(root), "k")) == "v");
    CHECK(list->size(list->next(list->first(root))) == 0);
}

TEST_CASE("a tree a million levels deep is built and walked without recursion") {
    // The upgrade's state is read into a JsonTree: its nesting must cost no stack.
    constexpr std::size_t k_levels = 1000000;
    std::string text;
    for (std::size_t i = 0; i < k_levels; ++i) {
        text += "{\"a\":[";
    }
    text += "7" + repeat_closers(k_levels);
    auto tree = JsonTree::parse(text);
    REQUIRE(tree.has_value());
    JsonTree::Index node = JsonTree::root();
    std::size_t levels = 0;
    while (tree->is_object(node)) {
        JsonTree::Index member = tree->find(node, "a");
        REQUIRE(member != tree->end(node));
        REQUIRE(tree->is_array(member));
        REQUIRE(tree->size(member) == 1);
        node = tree->first(member);
        ++levels;
    }
    CHECK(levels == k_levels);
    CHECK(tree->number(node) == 7);
    CHECK(tree->end(JsonTree::root()) == 2 * k_levels + 1);
    CHECK_FALSE(JsonTree::parse(std::string(k_levels, '[')).has_value());
}
