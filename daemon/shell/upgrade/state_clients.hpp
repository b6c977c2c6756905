#pragma once
// The client connections of an upgrade in place in its state file (SPEC §16), version 3
// on: the list "clients", one object a connection (see control/carried_client.hpp).
// Their bytes (input, output, the request's line) may be any bytes, cut anywhere, and
// are written in hex: the document's strings are UTF-8.
//
//   {"fd": 12, "served": true, "finishing": false, "eof": false, "input": "<hex>",
//    "output": "<hex>", "request": "<hex>", "waiting": "wait",
//    "services": ["web"], "marks": [0], "deadline": <ns from the hand-over>}

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/shell/control/carried_client.hpp"
#include "proto/json_tree.hpp"
#include "proto/json_writer.hpp"

namespace pkit::shell::upgrade {

// Writes the member "clients" into the object open in `out`.
void write_clients(proto::JsonWriter& out, const std::vector<CarriedClient>& clients);

// Reads the member "clients" of the document's top object into `clients`; on an error
// returns it, naming the field ("clients.2.waiting: unknown"), and `clients` holds
// what was read before it.
std::string read_clients(const proto::JsonTree& doc, std::vector<CarriedClient>& clients);

// Bytes as lower-case hex, and back (nullopt: not hex).
std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace pkit::shell::upgrade
