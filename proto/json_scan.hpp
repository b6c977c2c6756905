#pragma once
// scan_json: a strict JSON reader (RFC 8259) that hands each value to a SAX handler in
// the order nlohmann::json::sax_parse would, for the replies pkitctl reads in bulk.
//
// nlohmann's lexer copies every character of every token into a buffer of its own, and
// each one again into a second buffer kept for error messages: ~110 instructions a byte,
// a third of `pkitctl status`'s time at 1,000 services. This reader hands over a string
// without escapes from one copy of its bytes and reads numbers in place.
//
// What it accepts and the calls it makes are sax_parse's (tests/unit/proto/
// test_json_scan.cpp and the fuzz target status_reply compare the two): numbers without
// a fraction or exponent go to number_unsigned, or number_integer when negative, and to
// number_float when they do not fit; a number that does not fit even a double is an
// error; strings must be valid UTF-8 with valid escapes; a UTF-8 byte order mark at the
// start is skipped, and a NUL byte outside a string ends the text. On a syntax error,
// parse_error gets the byte offset and a message (its exception says the same), and
// nothing more is called.

#include <string_view>

#include <nlohmann/json.hpp>

namespace pkit::proto {

using JsonSax = nlohmann::json_sax<nlohmann::json>;

// Reads `text` as one JSON value, calling `handler` for each part of it. False when the
// text is not JSON (after handler.parse_error) or when a call of the handler returned
// false (reading stops there, as sax_parse's does).
bool scan_json(std::string_view text, JsonSax& handler);

// Whether `text` nests arrays and objects more than `limit` deep, the outermost one
// counting 1: its brackets outside strings, counted in one pass that stops there. For
// any text, JSON or not, before a parser builds a tree whose copy, print or comparison
// would recurse as deep.
bool json_deeper_than(std::string_view text, int limit);

}  // namespace pkit::proto
