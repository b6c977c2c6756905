#include "proto/reply.hpp"

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

}  // namespace pkit::proto
