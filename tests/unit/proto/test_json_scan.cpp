// scan_json against nlohmann's sax_parse: for valid and broken JSON, and for thousands
// of deterministic mutations of status replies, both make the same calls in the same
// order, accept the same texts and refuse the same ones.

#include "tests/unit/proto/proto_doctest.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/json_scan.hpp"
#include "proto/reply.hpp"
#include "proto/status.hpp"
#include "tests/unit/proto/awkward_status.hpp"
#include "tests/unit/proto/json_recorder.hpp"

using namespace pkit::proto;
using pkit::proto::test::awkward_status;
using pkit::proto::test::JsonRecorder;

namespace {

struct Outcome {
    bool accepted;
    std::string calls;
};

Outcome by_scan(const std::string& text, int stop_at = -1) {
    JsonRecorder recorder(stop_at);
    bool accepted = scan_json(text, recorder);
    return {accepted, recorder.calls};
}

Outcome by_nlohmann(const std::string& text, int stop_at = -1) {
    JsonRecorder recorder(stop_at);
    bool accepted = nlohmann::json::sax_parse(text, &recorder);
    return {accepted, recorder.calls};
}

void same_as_nlohmann(const std::string& text) {
    CAPTURE(text);
    Outcome scan = by_scan(text);
    Outcome reference = by_nlohmann(text);
    CHECK(scan.accepted == reference.accepted);
    CHECK(scan.calls == reference.calls);
}

std::string status_reply(int rows) {
    StatusResult result;
    for (int k = 0; k < rows; ++k) {
        result.services.push_back(awkward_status(k));
    }
    std::string line = ok_reply(7, nlohmann::json(result));
    line.pop_back();  // its newline
    return line;
}

}  // namespace

TEST_CASE("scan_json: valid JSON makes the calls sax_parse makes") {
    for (const char* text : {
             "{}",
             "[]",
             "0",
             "-0",
             "1",
             "-1",
             "12345678901234567890",
             "18446744073709551615",
             "18446744073709551616",
             "-9223372036854775808",
             "-9223372036854775809",
             "1.5",
             "-2.25e-3",
             "1E+2",
             "1e-400",
             "0.1e1",
             "true",
             "false",
             "null",
             "\"\"",
             " \t\r\n[ 1 , {\"a\" : [ ] , \"b\":{}} ]\n ",
             R"({"a":{"b":{"c":[[[]]]}}})",
             R"(["\"\\\/\b\f\n\r\t"])",
             R"(["\u0041\u00e9\u20ac\ud83d\ude00\u0000"])",
             "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]",
             "\xEF\xBB\xBF[1]",
             R"({"a":1,"a":2})",
             R"([1.0,2.50,1e5,-0.0])",
         }) {
        same_as_nlohmann(text);
    }
    same_as_nlohmann(status_reply(12));
    // A NUL byte outside a string ends the text for both (found by the fuzz target).
    same_as_nlohmann(std::string("{\"a\":1}\0garbage", 16));
    same_as_nlohmann(std::string("[1\0]", 4));
    same_as_nlohmann(std::string("[\"a\0\"]", 6));
}

TEST_CASE("scan_json: broken JSON is refused where sax_parse refuses it") {
    for (const char* text : {
             "",
             " ",
             "{",
             "[",
             "]",
             "}",
             "[1,]",
             "[,1]",
             "{\"a\"}",
             "{\"a\":}",
             "{\"a\" 1}",
             "{a:1}",
             "{\"a\":1,}",
             "[1 2]",
             "01",
             "-",
             "+1",
             "1.",
             ".5",
             "1e",
             "1e+",
             "--1",
             "0x1",
             "1e400",
             "-1e400",
             "tru",
             "nul",
             "truex",
             "[true false]",
             "\"abc",
             "\"a\nb\"",
             "\"\\x\"",
             "\"\\u12\"",
             "\"\\u12G4\"",
             "\"\\ud83d\"",
             "\"\\ud83dx\"",
             "\"\\ud83d\\u0041\"",
             "\"\\ude00\"",
             "\"\xff\"",
             "\"\xc3\"",
             "\"\xc0\xaf\"",
             "\"\xe0\x80\xaf\"",
             "\"\xed\xa0\x80\"",
             "\"\xf4\x90\x80\x80\"",
             "\"\xf5\x80\x80\x80\"",
             "[1]x",
             "[1] [2]",
             "{}}",
             "[[]",
             "\xEF\xBB[1]",
             "[1,\"a\":2]",
             "{\"a\":1]",
         }) {
        same_as_nlohmann(text);
    }
    // Bytes past the end of the text are never read: a text cut anywhere is refused.
    std::string reply = status_reply(3);
    for (std::size_t cut = 0; cut < reply.size(); ++cut) {
        same_as_nlohmann(reply.substr(0, cut));
    }
}

TEST_CASE("scan_json: a handler that says stop stops both readers at the same call") {
    std::string reply = status_reply(4);
    const std::string all = by_nlohmann(reply).calls;
    const int calls = static_cast<int>(std::ranges::count(all, '\n'));
    REQUIRE(calls > 50);
    for (int stop_at = 1; stop_at <= calls; stop_at += 7) {
        CAPTURE(stop_at);
        Outcome scan = by_scan(reply, stop_at);
        Outcome reference = by_nlohmann(reply, stop_at);
        CHECK_FALSE(scan.accepted);
        CHECK(scan.calls == reference.calls);
    }
}

TEST_CASE("scan_json: 20,000 mutated status replies are read as sax_parse reads them") {
    const std::string reply = status_reply(6);
    const std::string alphabet = "{}[],:\"\\-+.0123456789eEtfnul \n\xc3\xa9\xff";
    std::mt19937 random(20261201);  // fixed: the same cases every run
    int differences = 0;
    for (int i = 0; i < 20'000; ++i) {
        std::string text = reply;
        const int edits = 1 + static_cast<int>(random() % 3);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = random() % text.size();
            const char c = alphabet[random() % alphabet.size()];
            switch (random() % 3) {
                case 0:
                    text[at] = c;
                    break;
                case 1:
                    text.insert(text.begin() + static_cast<long>(at), c);
                    break;
                default:
                    text.erase(at, 1 + random() % 4);
                    break;
            }
        }
        Outcome scan = by_scan(text);
        Outcome reference = by_nlohmann(text);
        if (scan.accepted != reference.accepted || scan.calls != reference.calls) {
            if (++differences <= 3) {
                CAPTURE(text);
                CHECK(scan.calls == reference.calls);
            }
        }
    }
    CHECK(differences == 0);
}

TEST_CASE("scan_json: a million levels are read with a stack of its own, not the call stack") {
    // Replies and the upgrade's state go through scan_json: nesting is input-controlled.
    constexpr std::size_t k_levels = 1000000;
    std::string arrays = std::string(k_levels, '[') + std::string(k_levels, ']');
    std::string objects;
    for (std::size_t i = 0; i < k_levels; ++i) {
        objects += "{\"a\":";
    }
    objects += "1" + std::string(k_levels, '}');
    for (const std::string* text : {&arrays, &objects}) {
        JsonRecorder recorder;
        CHECK(scan_json(*text, recorder));
        CHECK(std::ranges::count(recorder.calls, '\n') >= 2 * k_levels);
    }
    // Unclosed: refused at the end, as sax_parse refuses it.
    same_as_nlohmann(std::string(200000, '['));
    same_as_nlohmann(std::string(100000, '[') + "1" + std::string(99999, ']'));
}
