#include "proto/reply.hpp"

#include "proto/json_scan.hpp"

namespace pkit::proto {

std::string to_line(const json& value) {
    std::string line = value.dump(-1, ' ', false, json::error_handler_t::replace);
    line.push_back('\n');
    return line;
}

std::string ok_reply(const json& id, const json& result) {
    return to_line(json{{"id", id}, {"ok", true}, {"result", result}});
}

std::string ok_reply(const json& id, json&& result) {
    json reply = json::object();
    reply["id"] = id;
    reply["ok"] = true;
    reply["result"] = std::move(result);
    return to_line(reply);
}

std::string error_reply(const json& id, ErrorCode code, std::string_view message) {
    json error{{"code", to_string(code)}, {"message", message}};
    return to_line(json{{"id", id}, {"ok", false}, {"error", std::move(error)}});
}

std::string error_reply(const Error& error) {
    return error_reply(error.id, error.code, error.message);
}

std::string event_line(const json& id, const json& event) {
    return event_head(id) + stream_body(event);
}

std::string log_line(const json& id, const json& line) {
    return log_head(id) + stream_body(line);
}

std::string event_head(const json& id) {
    return "{\"id\":" + id.dump(-1, ' ', false, json::error_handler_t::replace) + ",\"event\":";
}

std::string log_head(const json& id) {
    return "{\"id\":" + id.dump(-1, ' ', false, json::error_handler_t::replace) + ",\"line\":";
}

std::string stream_body(const json& body) {
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    text += "}\n";
    return text;
}

namespace {

std::expected<Reply, std::string> read_error(Reply reply, const json& error) {
    if (!error.is_object()) {
        return std::unexpected("\"error\" is not an object");
    }
    reply.kind = Reply::Kind::error;
    reply.error.id = reply.id;
    if (auto code = error.find("code"); code != error.end() && code->is_string()) {
        reply.error.code =
            error_code_from_string(code->get<std::string>()).value_or(ErrorCode::bad_request);
    }
    if (auto message = error.find("message"); message != error.end() && message->is_string()) {
        reply.error.message = message->get<std::string>();
    }
    return reply;
}

}  // namespace

std::expected<Reply, std::string> parse_reply(std::string_view line) noexcept {
    try {
        if (json_deeper_than(line, k_max_reply_depth + 1)) {
            return std::unexpected("the reply is nested more than " +
                                   std::to_string(k_max_reply_depth) + " levels deep");
        }
        auto value = json::parse(line, nullptr, false);
        if (value.is_discarded() || !value.is_object()) {
            return std::unexpected("the reply is not a JSON object");
        }
        Reply reply;
        if (auto id = value.find("id"); id != value.end()) {
            reply.id = std::move(*id);
        }
        if (auto ok = value.find("ok"); ok != value.end()) {
            if (!ok->is_boolean()) {
                return std::unexpected("\"ok\" is not a boolean");
            }
            if (!ok->get<bool>()) {
                return read_error(std::move(reply), value["error"]);
            }
            reply.kind = Reply::Kind::result;
            reply.body = std::move(value["result"]);
            return reply;
        }
        if (auto event = value.find("event"); event != value.end()) {
            reply.kind = Reply::Kind::event;
            reply.body = std::move(*event);
            return reply;
        }
        if (auto entry = value.find("line"); entry != value.end()) {
            reply.kind = Reply::Kind::line;
            reply.body = std::move(*entry);
            return reply;
        }
        return std::unexpected("the reply has none of \"ok\", \"event\" or \"line\"");
    } catch (...) {
        return std::unexpected("the reply could not be processed");
    }
}

namespace {

// Takes any JSON text and keeps nothing: scan_json's check, without a tree.
class JsonChecker final : public JsonSax {
public:
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return false; }  // not in JSON text
    bool start_object(std::size_t) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool key(string_t&) override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return false;
    }
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view text, std::size_t at) {
    while (at < text.size() && is_space(text[at])) {
        ++at;
    }
    return at;
}

// In valid JSON text, from the start of a value: where it ends (the `,` or `}` after it
// at its own level, or the text's end).
std::size_t skip_value(std::string_view text, std::size_t at) {
    int depth = 0;
    bool in_string = false;
    for (; at < text.size(); ++at) {
        const char c = text[at];
        if (in_string) {
            if (c == '\\') {
                ++at;  // the escaped character, whatever it is
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                return at;
            }
            --depth;
        } else if (c == ',' && depth == 0) {
            return at;
        }
    }
    return at;
}

}  // namespace

std::optional<std::string_view> result_text(std::string_view line) {
    JsonChecker checker;
    if (!scan_json(line, checker)) {
        return std::nullopt;
    }
    // Valid JSON from here on: only its top-level members are walked.
    std::size_t at = skip_space(line, 0);
    if (at >= line.size() || line[at] != '{') {
        return std::nullopt;
    }
    bool ok = false;
    std::optional<std::string_view> result;
    at = skip_space(line, at + 1);
    while (at < line.size() && line[at] == '"') {
        std::size_t key_end = at + 1;  // past the key's closing quote
        while (key_end < line.size() && line[key_end] != '"') {
            key_end += line[key_end] == '\\' ? 2 : 1;
        }
        const std::string_view key = line.substr(at, key_end + 1 - at);
        const std::size_t value_begin = skip_space(line, skip_space(line, key_end + 1) + 1);
        const std::size_t member_end = skip_value(line, value_begin);
        std::size_t value_end = member_end;
        while (value_end > value_begin && is_space(line[value_end - 1])) {
            --value_end;  // whitespace before the `,` or `}`
        }
        const std::string_view value = line.substr(value_begin, value_end - value_begin);
        // A key given twice counts as its last, as parse_reply reads it.
        if (key == "\"ok\"") {
            ok = value == "true";
        } else if (key == "\"result\"") {
            result = value;
        }
        if (member_end >= line.size() || line[member_end] != ',') {
            break;
        }
        at = skip_space(line, member_end + 1);
    }
    if (!ok || !result) {
        return std::nullopt;
    }
    return result;
}

}  // namespace pkit::proto
