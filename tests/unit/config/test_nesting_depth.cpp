// Nesting in a configuration file, bounded before anything recurses on it: TOML levels
// (config/toml_depth.hpp) and variables inside defaults (config/variables.hpp), each
// refused past 32 with an error at its place, whatever the depth (a million here).

#include "tests/unit/config/config_doctest.hpp"

#include "config/loader.hpp"
#include "config/toml_depth.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using pkit::config::detail::k_max_toml_depth;
using pkit::config::detail::toml_too_deep;
using pkit::config::test::TempTree;

namespace {

constexpr std::size_t k_million = 1000000;

std::string repeat(std::string_view part, std::size_t times) {
    std::string out;
    out.reserve(part.size() * times);
    for (std::size_t i = 0; i < times; ++i) {
        out += part;
    }
    return out;
}

// "a.a.a = 1" with `parts` parts.
std::string dotted_key(std::size_t parts) {
    return "a" + repeat(".a", parts - 1) + " = 1\n";
}

// "x = [[...]]" with `arrays` arrays.
std::string nested_arrays(std::size_t arrays) {
    return "x = " + std::string(arrays, '[') + std::string(arrays, ']') + "\n";
}

// "x = {a = {a = ... 1}}" with `tables` inline tables.
std::string nested_tables(std::size_t tables) {
    return "x = " + repeat("{a = ", tables) + "1" + std::string(tables, '}') + "\n";
}

// Where toml_too_deep() stops, as "LINE:COLUMN", or "" when the text is within bounds.
std::string too_deep_at(std::string_view text) {
    auto at = toml_too_deep(text);
    return at ? std::to_string(at->line) + ":" + std::to_string(at->column) : "";
}

std::vector<std::string> load_errors(std::string_view text, TextKind kind) {
    const std::string file =
        kind == TextKind::service ? "conf/services/deep.toml" : "conf/pkitd.toml";
    auto result = load_text(text, kind, file, LoadOptions{.as_root = true});
    std::vector<std::string> out;
    if (!result) {
        for (const Diagnostic& diagnostic : result.error()) {
            out.push_back(diagnostic.to_string());
        }
    }
    return out;
}

const std::string k_toml_message =
    "nested more than 32 deep (each part of a table's name or of a dotted key, and each "
    "array, is one level)";

// ${A:-${A:-...x}} with `depth` variables.
std::string nested_variables(std::size_t depth) {
    return repeat("${A:-", depth) + "x" + std::string(depth, '}');
}

}  // namespace

TEST_CASE("toml_too_deep: 32 levels pass, the 33rd is refused where it starts") {
    static_assert(k_max_toml_depth == 32);  // man/pkit.toml.5 says 32
    CHECK(too_deep_at(dotted_key(32)) == "");
    CHECK(too_deep_at(dotted_key(33)) == "1:65");  // the 33rd "a"
    CHECK(too_deep_at(nested_arrays(31)) == "");   // x, then 31 arrays
    CHECK(too_deep_at(nested_arrays(32)) == "1:36");
    CHECK(too_deep_at(nested_tables(31)) == "");  // x, then 31 keys a
    CHECK(too_deep_at(nested_tables(32)) == "1:161");
    CHECK(too_deep_at("[" + std::string("t") + repeat(".t", 31) + "]\n") == "");
    CHECK(too_deep_at("[" + std::string("t") + repeat(".t", 31) + "]\nk = 1\n") == "2:1");
    CHECK(too_deep_at("[" + std::string("t") + repeat(".t", 32) + "]\n") == "1:66");
    // [[t...]] counts its array: 31 parts and the array fill the 32 levels.
    CHECK(too_deep_at("[[" + std::string("t") + repeat(".t", 30) + "]]\n") == "");
    CHECK(too_deep_at("[[" + std::string("t") + repeat(".t", 31) + "]]\n") == "1:65");
}

TEST_CASE("toml_too_deep adds header, key, inline tables and arrays together") {
    // [a.b] 2, c.d 4, {e.f} 6, [ 7, { g 8 ... : one more pair of levels a line.
    std::string text = "[a.b]\nc.d = {e.f = [{g = 1}]}\n";
    CHECK(too_deep_at(text) == "");
    // 20 header parts, 10 key parts, then arrays: the third is the 33rd level.
    std::string mixed = "[h" + repeat(".h", 19) + "]\nk" + repeat(".k", 9) + " = [[[1]]]\n";
    CHECK(too_deep_at(mixed) == "2:25");
    // The header's level is the latest header's, not the deepest seen.
    std::string reset = "[h" + repeat(".h", 30) + "]\nk = 1\n[x]\nk" + repeat(".k", 30) + " = 1\n";
    CHECK(too_deep_at(reset) == "");
}

TEST_CASE("toml_too_deep skips strings and comments as TOML does") {
    const std::string brackets(100, '[');
    for (const std::string& value :
         {"\"" + brackets + "\"", "'" + brackets + "'", "\"\"\"\n" + brackets + "\n\"\"\"",
          "'''\n" + brackets + "\n'''", "\"\\\"" + brackets + "\"", "1 # " + brackets}) {
        CAPTURE(value);
        CHECK(too_deep_at("x = " + value + "\n") == "");
    }
    // A quoted key part holding dots is one part; a comment's dots count nothing.
    CHECK(too_deep_at("\"" + repeat("a.", 100) + "\" = 1\n# " + repeat("a.", 100) + "\n") == "");
    // A multi-line string may end with two quotes of its own: what follows is counted.
    CHECK(too_deep_at("x = [\"\"\"q\"\"\"\"\", " + std::string(40, '[') + "]\n") == "1:47");
    // Dots in a value (numbers, dates) are not key parts.
    CHECK(too_deep_at("x = " + repeat("1.5, ", 3) + "\n") == "");
    CHECK(too_deep_at("x = [" + repeat("1.5, ", 100) + "]\n") == "");
    // Lines and columns as toml++ counts them: characters, after a byte order mark.
    CHECK(too_deep_at("\xEF\xBB\xBF# \xC3\xA9\n\xC3\xA9 = " + std::string(40, '[')) == "2:36");
}

TEST_CASE("toml_too_deep takes a million levels of each kind in one pass") {
    CHECK(too_deep_at(dotted_key(k_million)) == "1:65");
    CHECK(too_deep_at(nested_arrays(k_million)) == "1:36");
    CHECK(too_deep_at("[a" + repeat(".a", k_million) + "]\n") == "1:66");
    CHECK(too_deep_at("[[a" + repeat(".a", k_million) + "]]\n") == "1:65");
    CHECK(too_deep_at("x = {" + dotted_key(k_million) + "}") == "1:68");
    CHECK(too_deep_at(nested_tables(k_million)) == "1:161");
    CHECK(too_deep_at("x = " + repeat("[{a = ", k_million)) == "1:97");
}

TEST_CASE("a file nested a million deep is one positioned error, as service or pkitd.toml") {
    // Before the bound, toml++ overflowed the stack on each of these (dotted keys from
    // about 100,000 parts, freeing its tables), or stopped at 256 for arrays.
    const std::pair<std::string, std::string> cases[] = {
        {dotted_key(k_million), "1:65"},
        {nested_arrays(k_million), "1:36"},
        {nested_tables(k_million), "1:161"},
        {"[a" + repeat(".a", k_million) + "]\n", "1:66"},
        {"command = [\"x\"]\n[[a" + repeat(".a", k_million) + "]]\n", "2:65"},
    };
    for (const auto& [text, where] : cases) {
        CAPTURE(where);
        CHECK(load_errors(text, TextKind::service) ==
              std::vector<std::string>{"conf/services/deep.toml:" + where +
                                       ": error: " + k_toml_message});
        CHECK(load_errors(text, TextKind::daemon) ==
              std::vector<std::string>{"conf/pkitd.toml:" + where + ": error: " + k_toml_message});
    }
}

TEST_CASE("variables nested a million deep are an error at their value, wherever they are") {
    const std::string deep = nested_variables(k_million);
    const std::string tail = ": variables nested more than 32 deep (at character 161 of the value)";
    CHECK(load_errors("command = [\"/bin/echo\", \"" + deep + "\"]\n", TextKind::service) ==
          std::vector<std::string>{"conf/services/deep.toml:1:25: error: command" + tail});
    CHECK(load_errors("command = [\"x\"]\n[env]\nV = \"" + deep + "\"\n", TextKind::service) ==
          std::vector<std::string>{"conf/services/deep.toml:3:5: error: env.V" + tail});
    CHECK(load_errors("command = [\"x\"]\ncwd = \"" + deep + "\"\n", TextKind::service) ==
          std::vector<std::string>{"conf/services/deep.toml:2:7: error: cwd" + tail});
    CHECK(load_errors("command = [\"x\"]\n[health]\nhttp = \"http://" + deep + "\"\ninterval = 1\n",
                      TextKind::service) ==
          std::vector<std::string>{"conf/services/deep.toml:3:8: error: health.http" +
                                   std::string(": variables nested more than 32 deep (at "
                                               "character 168 of the value)")});
    CHECK(load_errors("command = [\"x\"]\n[ready]\ntcp = \"" + deep + "\"\n", TextKind::service) ==
          std::vector<std::string>{"conf/services/deep.toml:3:7: error: ready.tcp" + tail});
    CHECK(load_errors("[env]\nV = \"" + deep + "\"\n", TextKind::daemon) ==
          std::vector<std::string>{"conf/pkitd.toml:2:5: error: env.V" + tail});
    // 32 levels are a valid service.
    CHECK(load_errors("command = [\"/bin/echo\", \"" + nested_variables(32) + "\"]\n",
                      TextKind::service)
              .empty());
}

TEST_CASE("--check names at most 8 undefined variables a value, however many it holds") {
    // One pass over the value a name: 60,000 of them in 700 KB kept it busy for hours.
    std::string many;
    for (int i = 0; i < 60000; ++i) {
        many += "${PKITU" + std::to_string(i) + "}";
    }
    TempTree tree;
    tree.service("web", "command = [\"/bin/echo\", \"" + many + "\"]\n");
    std::vector<Diagnostic> warnings;
    LoadOptions options{.as_root = true};
    options.warnings = &warnings;
    REQUIRE(tree.load(options));
    REQUIRE(warnings.size() == 9);
    CHECK(warnings[0].message.starts_with("command: variable \"PKITU0\" is not defined"));
    CHECK(warnings[7].message.starts_with("command: variable \"PKITU7\" is not defined"));
    CHECK(warnings[8].message ==
          "command: more variables are not defined either (the first 8 of a value are named)");
    // Eight or fewer are each named, with no such line.
    warnings.clear();
    tree.service("web", "command = [\"/bin/echo\", \"${PKITU1}${PKITU2}\"]\n");
    REQUIRE(tree.load(options));
    CHECK(warnings.size() == 2);
}
