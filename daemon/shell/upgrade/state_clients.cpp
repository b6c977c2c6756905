#include "daemon/shell/upgrade/state_clients.hpp"

#include <array>
#include <limits>
#include <optional>
#include <utility>

namespace pkit::shell::upgrade {

namespace {

using Index = proto::JsonTree::Index;
using Kind = proto::JsonTree::Kind;

constexpr std::array<std::pair<CarriedWait, const char*>, 5> k_waits{{
    {CarriedWait::none, "none"},
    {CarriedWait::again, "again"},
    {CarriedWait::command, "command"},
    {CarriedWait::wait, "wait"},
    {CarriedWait::upgrade, "upgrade"},
}};

int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

// One client object's members, strictly: the first error is kept with its field.
class ClientReader {
public:
    ClientReader(const proto::JsonTree& doc, Index object, std::string path, std::string& error)
        : m_doc(doc), m_object(object), m_path(std::move(path)), m_error(error) {}

    void flag(const char* name, bool& v) {
        if (auto j = field(name, Kind::boolean, "not a boolean")) {
            v = m_doc.boolean(*j);
        }
    }
    void bytes(const char* name, std::string& v) {
        if (auto j = field(name, Kind::string, "not a string")) {
            auto decoded = from_hex(m_doc.string(*j));
            if (!decoded) {
                fail(name, "not hex");
                return;
            }
            v = std::move(*decoded);
        }
    }
    void whole(const char* name, std::int64_t& v, std::int64_t low, std::int64_t high) {
        auto j = field(name);
        if (!j) {
            return;
        }
        if (m_doc.kind(*j) == Kind::integer && m_doc.integer(*j) >= low &&
            m_doc.integer(*j) <= high) {
            v = m_doc.integer(*j);
        } else if (m_doc.kind(*j) == Kind::unsigned_ &&
                   m_doc.unsigned_integer(*j) <= static_cast<std::uint64_t>(high) &&
                   static_cast<std::int64_t>(m_doc.unsigned_integer(*j)) >= low) {
            v = static_cast<std::int64_t>(m_doc.unsigned_integer(*j));
        } else {
            fail(name, "not an integer in range");
        }
    }
    void waiting(const char* name, CarriedWait& v) {
        if (auto j = field(name, Kind::string, "not a string")) {
            for (const auto& [value, text] : k_waits) {
                if (m_doc.string(*j) == text) {
                    v = value;
                    return;
                }
            }
            fail(name, "unknown");
        }
    }
    void names(const char* name, std::vector<std::string>& v) {
        auto j = field(name, Kind::array, "not a list");
        for (Index e = j ? m_doc.first(*j) : 0; j && e != m_doc.end(*j); e = m_doc.next(e)) {
            if (m_doc.kind(e) != Kind::string) {
                fail(name, "holds what is not a string");
                return;
            }
            v.emplace_back(m_doc.string(e));
        }
    }
    void counts(const char* name, std::vector<std::uint64_t>& v) {
        auto j = field(name, Kind::array, "not a list");
        for (Index e = j ? m_doc.first(*j) : 0; j && e != m_doc.end(*j); e = m_doc.next(e)) {
            if (m_doc.kind(e) != Kind::unsigned_) {
                fail(name, "holds what is not a whole number");
                return;
            }
            v.push_back(m_doc.unsigned_integer(e));
        }
    }
    void fail(const char* name, const char* why) {
        if (m_error.empty()) {
            m_error = m_path + name + ": " + why;
        }
    }

private:
    std::optional<Index> field(const char* name) {
        if (!m_error.empty()) {
            return std::nullopt;
        }
        Index it = m_doc.find(m_object, name, &m_hint);
        if (it == m_doc.end(m_object)) {
            fail(name, "missing");
            return std::nullopt;
        }
        return it;
    }
    std::optional<Index> field(const char* name, Kind kind, const char* wrong) {
        auto j = field(name);
        if (j && m_doc.kind(*j) != kind) {
            fail(name, wrong);
            return std::nullopt;
        }
        return j;
    }

    const proto::JsonTree& m_doc;
    Index m_object;
    Index m_hint = 0;
    std::string m_path;
    std::string& m_error;
};

}  // namespace

std::string to_hex(std::string_view bytes) {
    constexpr char k_digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        hex += k_digits[c >> 4];
        hex += k_digits[c & 0xf];
    }
    return hex;
}

std::optional<std::string> from_hex(std::string_view hex) {
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    std::string bytes;
    bytes.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        int high = hex_digit(hex[i]);
        int low = hex_digit(hex[i + 1]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        bytes += static_cast<char>(high * 16 + low);
    }
    return bytes;
}

void write_clients(proto::JsonWriter& out, const std::vector<CarriedClient>& clients) {
    out.key("clients");
    out.begin_array();
    for (const CarriedClient& c : clients) {
        const CarriedConnection& k = c.connection;
        out.begin_object();
        out.key("fd");
        out.value(k.fd);
        out.key("served");
        out.value(k.served);
        out.key("finishing");
        out.value(k.finishing);
        out.key("eof");
        out.value(k.eof);
        out.key("input");
        out.value(to_hex(k.input));
        out.key("output");
        out.value(to_hex(k.output));
        out.key("request");
        out.value(to_hex(k.request));
        out.key("waiting");
        for (const auto& [value, text] : k_waits) {
            if (value == c.waiting) {
                out.value(text);
            }
        }
        out.key("services");
        out.begin_array();
        for (const std::string& name : c.services) {
            out.value(name);
        }
        out.end_array();
        out.key("marks");
        out.begin_array();
        for (std::uint64_t mark : c.marks) {
            out.value(mark);
        }
        out.end_array();
        out.key("deadline");
        out.value(c.deadline_ns);
        out.end_object();
    }
    out.end_array();
}

std::string read_clients(const proto::JsonTree& doc, std::vector<CarriedClient>& clients) {
    const Index root = proto::JsonTree::root();
    const Index list = doc.find(root, "clients");
    if (list == doc.end(root) || !doc.is_array(list)) {
        return "clients: not a list";
    }
    std::string error;
    std::size_t n = 0;
    for (Index e = doc.first(list); e != doc.end(list) && error.empty(); e = doc.next(e), ++n) {
        const std::string path = "clients." + std::to_string(n) + ".";
        if (!doc.is_object(e)) {
            return path.substr(0, path.size() - 1) + ": not an object";
        }
        ClientReader r(doc, e, path, error);
        CarriedClient c;
        CarriedConnection& k = c.connection;
        std::int64_t fd = -1;
        r.whole("fd", fd, 3, std::numeric_limits<int>::max());
        k.fd = static_cast<int>(fd);
        r.flag("served", k.served);
        r.flag("finishing", k.finishing);
        r.flag("eof", k.eof);
        r.bytes("input", k.input);
        r.bytes("output", k.output);
        r.bytes("request", k.request);
        r.waiting("waiting", c.waiting);
        r.names("services", c.services);
        r.counts("marks", c.marks);
        r.whole("deadline", c.deadline_ns, -(std::int64_t{1} << 62), std::int64_t{1} << 62);
        if (error.empty() && (c.waiting == CarriedWait::none) != k.request.empty()) {
            r.fail("waiting", "does not go with the request");
        }
        if (error.empty() && c.services.size() != c.marks.size()) {
            r.fail("marks", "not one for each service");
        }
        if (error.empty()) {
            clients.push_back(std::move(c));
        }
    }
    return error;
}

}  // namespace pkit::shell::upgrade
