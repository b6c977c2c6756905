#include "tests/integration/harness_client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "proto/line_client.hpp"
#include "tests/integration/harness_doctest.hpp"

namespace pkit::itest {

Client::Client(const std::string& socket_path) {
    auto fd = proto::connect_unix(socket_path);
    if (!fd) {
        throw std::runtime_error("cannot connect to " + socket_path + ": " + fd.error().text);
    }
    m_fd = *fd;
}

Client::~Client() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

Client::Client(Client&& other) noexcept
    : m_fd(other.m_fd),
      m_buffer(std::move(other.m_buffer)),
      m_queued(std::move(other.m_queued)),
      m_eof(other.m_eof),
      m_next_id(other.m_next_id),
      m_send_error(std::move(other.m_send_error)) {
    other.m_fd = -1;
}

std::optional<Client> Client::try_connect(const std::string& socket_path) {
    try {
        return Client(socket_path);
    } catch (const std::runtime_error&) {
        return std::nullopt;
    }
}

bool Client::try_send_raw(const std::string& bytes) {
    auto sent = proto::send_all(m_fd, bytes);
    if (!sent) {
        m_send_error = sent.error();
    }
    return sent.has_value();
}

void Client::send_raw(const std::string& bytes) {
    if (!try_send_raw(bytes)) {
        FAIL("send to pkitd failed: " << m_send_error);
    }
}

std::optional<std::string> Client::read_line(Clock::time_point deadline) {
    if (m_eof && m_buffer.find('\n') == std::string::npos) {
        return std::nullopt;
    }
    auto read = proto::read_line(m_fd, m_buffer, deadline);
    if (read.status == proto::LineRead::line) {
        return std::move(read.text);
    }
    if (read.status != proto::LineRead::timeout) {
        m_eof = true;  // closed, or a read error: nothing more will come
    }
    return std::nullopt;
}

std::optional<json> Client::read_json(Clock::time_point deadline) {
    if (!m_queued.empty()) {
        json front = std::move(m_queued.front());
        m_queued.pop_front();
        return front;
    }
    const auto line = read_line(deadline);
    if (!line) {
        return std::nullopt;
    }
    json parsed = json::parse(*line, nullptr, false);
    if (parsed.is_discarded()) {
        FAIL("pkitd sent a line that is not JSON: " << *line);
    }
    return parsed;
}

json Client::request(json req, Duration timeout) {
    if (!req.contains("id")) {
        req["id"] = m_next_id++;
    }
    send_raw(req.dump() + "\n");
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto line = read_line(deadline);
        if (!line) {
            FAIL("no reply from pkitd within " << timeout.count() << " ms to " << req.dump()
                                               << std::string(m_eof ? " (connection closed)" : ""));
        }
        json reply = json::parse(*line, nullptr, false);
        if (reply.is_discarded()) {
            FAIL("pkitd replied with a line that is not JSON: " << *line);
        }
        if (reply.contains("ok")) {
            return reply;
        }
        m_queued.push_back(std::move(reply));  // a stream line of an earlier request
    }
}

json Client::command(const std::string& cmd, Duration timeout) {
    return request({{"cmd", cmd}}, timeout);
}

void Client::shutdown_write() {
    ::shutdown(m_fd, SHUT_WR);
}

json status(Client& client, const std::string& name) {
    const json reply = client.request({{"cmd", "status"}, {"services", {name}}});
    REQUIRE_MESSAGE(reply.value("ok", false), "status " << name << " failed: " << reply.dump());
    const json& services = reply["result"]["services"];
    for (const auto& s : services) {
        if (s.value("name", "") == name) {
            return s;
        }
    }
    FAIL("status has no service " << name << ": " << reply.dump());
    return {};
}

json daemon_status(Client& client) {
    const json reply = client.command("status");
    REQUIRE_MESSAGE(reply.value("ok", false), "status failed: " << reply.dump());
    return reply["result"]["daemon"];
}

std::vector<std::string> texts(const json& logs_result) {
    std::vector<std::string> out;
    for (const auto& line : logs_result.at("lines")) {
        out.push_back(line.at("text").get<std::string>());
    }
    return out;
}

EventStream::EventStream(const std::string& socket_path) : m_client(socket_path) {
    const json reply = m_client.command("events");
    REQUIRE_MESSAGE(reply.value("ok", false), "events subscription failed: " << reply.dump());
}

std::optional<json> EventStream::next(Clock::time_point deadline) {
    while (auto line = m_client.read_json(deadline)) {
        if (line->contains("event")) {
            m_seen.push_back((*line)["event"]);
            return m_seen.back();
        }
    }
    return std::nullopt;
}

std::vector<json> EventStream::collect_until(Clock::time_point deadline) {
    std::vector<json> out;
    while (auto event = next(deadline)) {
        out.push_back(std::move(*event));
    }
    return out;
}

std::vector<json> EventStream::of_type(const std::string& type, const std::string& service) const {
    std::vector<json> out;
    for (const auto& e : m_seen) {
        if (e.value("type", "") == type &&
            (service.empty() || (e.contains("service") && e["service"] == service))) {
            out.push_back(e);
        }
    }
    return out;
}

void EventStream::fail_timeout(const std::string& what) const {
    std::string dump;
    for (const auto& e : m_seen) {
        dump += "\n  " + e.dump();
    }
    FAIL("timed out waiting for " << what << "; events seen:" << (dump.empty() ? " none" : dump));
    throw std::logic_error("unreachable");
}

}  // namespace pkit::itest
