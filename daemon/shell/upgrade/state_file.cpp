#include "daemon/shell/upgrade/state_file.hpp"

#include <functional>
#include <limits>
#include <optional>
#include <type_traits>

#include "config/instances.hpp"
#include "daemon/core/persist.hpp"
#include "daemon/shell/upgrade/state_clients.hpp"
#include "proto/json_writer.hpp"

namespace pkit::shell::upgrade {

namespace {

constexpr const char* k_format = "pkit-state";
// SPEC §13: a file's instances, 1 to 1000.
constexpr std::uint64_t k_max_scale = 1000;

std::int64_t ns_between(core::TimePoint from, core::TimePoint to) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

// The writer: every field straight into the document's text, in the order of the
// walk (which is the order the reader looks for them in), times relative to the
// hand-over.
class Writer {
public:
    Writer(proto::JsonWriter& out, core::TimePoint at, int version)
        : m_out(out), m_at(at), m_version(version) {}
    bool loading() const { return false; }
    int version() const { return m_version; }
    void fail(const char*, const char*) {}

    template <class T>
    void value(const char* name, T& v) {
        m_out.key(name);
        encode(v);
    }
    template <class T>
    void value(const char* name, std::optional<T>& v) {
        m_out.key(name);
        if (v) {
            encode(*v);
        } else {
            m_out.null();
        }
    }
    void time(const char* name, core::TimePoint& t) {
        m_out.key(name);
        m_out.value(ns_between(m_at, t));
    }
    void time(const char* name, core::OptionalTime& t) {
        std::optional<core::TimePoint> at = t;
        time(name, at);
    }
    void time(const char* name, std::optional<core::TimePoint>& t) {
        m_out.key(name);
        if (t) {
            m_out.value(ns_between(m_at, *t));
        } else {
            m_out.null();
        }
    }
    template <class E>
    void enumeration(const char* name, E& v, E /*last*/) {
        m_out.key(name);
        m_out.value(static_cast<int>(v));
    }
    void times(const char* name, std::vector<core::TimePoint>& ts) {
        m_out.key(name);
        m_out.begin_array();
        for (core::TimePoint t : ts) {
            m_out.value(ns_between(m_at, t));
        }
        m_out.end_array();
    }
    void lines(const char* name, std::vector<core::TailLine>& ls) {
        m_out.key(name);
        m_out.begin_array();
        for (const core::TailLine& l : ls) {
            m_out.begin_object();
            m_out.key("stream");
            m_out.value(static_cast<int>(l.stream));
            m_out.key("at");
            m_out.value(l.at);
            m_out.key("text");
            m_out.value(l.text);
            m_out.end_object();
        }
        m_out.end_array();
    }
    template <class Walk>
    void object(const char* name, Walk&& walk) {
        m_out.key(name);
        m_out.begin_object();
        walk(*this);
        m_out.end_object();
    }
    template <class NameOf, class Walk>
    void each(const char* name, std::size_t count, NameOf&& name_of, Walk&& walk) {
        m_out.key(name);
        m_out.begin_object();
        for (std::size_t i = 0; i < count; ++i) {
            m_out.key(name_of(i));
            m_out.begin_object();
            walk(i, *this);
            m_out.end_object();
        }
        m_out.end_object();
    }

private:
    template <class T>
    void encode(const T& v) {
        if constexpr (std::is_same_v<T, config::Duration>) {
            m_out.value(static_cast<std::int64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(v).count()));
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                             std::is_same_v<T, std::string>) {
            m_out.value(v);
        } else if constexpr (std::is_signed_v<T>) {
            m_out.value(static_cast<std::int64_t>(v));
        } else {
            m_out.value(static_cast<std::uint64_t>(v));
        }
    }

    proto::JsonWriter& m_out;
    core::TimePoint m_at;
    int m_version;
};

// The reader: every field from an object of the document, strictly. The first error is
// kept with the path to its field, and every later read is skipped.
class Reader {
public:
    using Index = proto::JsonTree::Index;
    Reader(const proto::JsonTree& doc, Index in, core::TimePoint at, std::string path,
           std::string& error, int version = core::k_state_version)
        : m_doc(doc),
          m_in(in),
          m_at(at),
          m_path(std::move(path)),
          m_error(error),
          m_version(version) {}
    bool loading() const { return true; }
    int version() const { return m_version; }
    void fail(const char* name, const char* why) {
        if (m_error.empty()) {
            m_error = m_path + name + ": " + why;
        }
    }

    template <class T>
    void value(const char* name, T& v) {
        if (auto j = field(name)) {
            decode(name, *j, v);
        }
    }
    template <class T>
    void value(const char* name, std::optional<T>& v) {
        if (auto j = field(name)) {
            if (m_doc.is_null(*j)) {
                v.reset();
            } else {
                T inner{};
                if (decode(name, *j, inner)) {
                    v = std::move(inner);
                }
            }
        }
    }
    void time(const char* name, core::TimePoint& t) {
        std::int64_t ns = 0;
        if (auto j = field(name); j && decode(name, *j, ns) && moment(name, ns)) {
            t = m_at + std::chrono::nanoseconds(ns);
        }
    }
    void time(const char* name, core::OptionalTime& t) {
        std::optional<core::TimePoint> at;
        time(name, at);
        t = at;
    }
    void time(const char* name, std::optional<core::TimePoint>& t) {
        std::optional<std::int64_t> ns;
        value(name, ns);
        if (ns && m_error.empty()) {
            moment(name, *ns);
        }
        if (m_error.empty()) {
            t = ns ? std::optional(m_at + std::chrono::nanoseconds(*ns)) : std::nullopt;
        }
    }
    template <class E>
    void enumeration(const char* name, E& v, E last) {
        int raw = 0;
        if (auto j = field(name); j && decode(name, *j, raw)) {
            if (raw < 0 || raw > static_cast<int>(last)) {
                fail(name, "out of range");
            } else {
                v = static_cast<E>(raw);
            }
        }
    }
    void times(const char* name, std::vector<core::TimePoint>& ts) {
        auto j = field(name);
        if (!j || !array(name, *j)) {
            return;
        }
        ts.clear();
        for (Index e = m_doc.first(*j); e != m_doc.end(*j); e = m_doc.next(e)) {
            std::int64_t ns = 0;
            if (!decode(name, e, ns) || !moment(name, ns)) {
                return;
            }
            ts.push_back(m_at + std::chrono::nanoseconds(ns));
        }
    }
    void lines(const char* name, std::vector<core::TailLine>& ls) {
        auto j = field(name);
        if (!j || !array(name, *j)) {
            return;
        }
        ls.clear();
        for (Index e = m_doc.first(*j); e != m_doc.end(*j); e = m_doc.next(e)) {
            if (!m_doc.is_object(e)) {
                fail(name, "a line is not an object");
                return;
            }
            Reader r(m_doc, e, m_at, m_path + name + ".", m_error, m_version);
            core::TailLine line;
            r.enumeration("stream", line.stream, core::Stream::stderr_);
            r.value("at", line.at);
            r.value("text", line.text);
            if (!m_error.empty()) {
                return;
            }
            ls.push_back(std::move(line));
        }
    }
    template <class Walk>
    void object(const char* name, Walk&& walk) {
        auto j = field(name);
        if (!j) {
            return;
        }
        if (!m_doc.is_object(*j)) {
            fail(name, "not an object");
            return;
        }
        Reader r(m_doc, *j, m_at, m_path + name + ".", m_error, m_version);
        walk(r);
    }
    template <class NameOf, class Walk>
    void each(const char* name, std::size_t count, NameOf&& name_of, Walk&& walk) {
        auto j = field(name);
        if (!j) {
            return;
        }
        if (!m_doc.is_object(*j)) {
            fail(name, "not an object");
            return;
        }
        Index hint = 0;
        for (std::size_t i = 0; i < count && m_error.empty(); ++i) {
            const auto& key = name_of(i);
            Index it = m_doc.find(*j, key, &hint);
            if (it == m_doc.end(*j) || !m_doc.is_object(it)) {
                fail(name, ("has no entry for " + std::string(key)).c_str());
                return;
            }
            Reader r(m_doc, it, m_at, m_path + name + "." + std::string(key) + ".", m_error,
                     m_version);
            walk(i, r);
        }
        if (m_error.empty() && m_doc.size(*j) != count) {
            fail(name, "names an entry the configuration does not have");
        }
    }

private:
    // A moment is written relative to the hand-over; one more than 2^62 ns (146 years)
    // away is no deadline pkitd sets, and the sum with the hand-over's moment could
    // overflow.
    bool moment(const char* name, std::int64_t ns) {
        constexpr std::int64_t k_far = std::int64_t{1} << 62;
        if (ns > k_far || ns < -k_far) {
            fail(name, "out of range");
            return false;
        }
        return true;
    }
    std::optional<Index> field(const char* name) {
        if (!m_error.empty()) {
            return std::nullopt;
        }
        Index it = m_doc.find(m_in, name, &m_hint);
        if (it == m_doc.end(m_in)) {
            fail(name, "missing");
            return std::nullopt;
        }
        return it;
    }
    bool array(const char* name, Index j) {
        if (!m_doc.is_array(j)) {
            fail(name, "not a list");
            return false;
        }
        return true;
    }
    template <class T>
    bool decode(const char* name, Index j, T& v) {
        using Kind = proto::JsonTree::Kind;
        if constexpr (std::is_same_v<T, bool>) {
            if (m_doc.kind(j) != Kind::boolean) {
                fail(name, "not a boolean");
                return false;
            }
            v = m_doc.boolean(j);
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (m_doc.kind(j) != Kind::string) {
                fail(name, "not a string");
                return false;
            }
            v = m_doc.string(j);
        } else if constexpr (std::is_same_v<T, double>) {
            if (!m_doc.is_number(j)) {
                fail(name, "not a number");
                return false;
            }
            v = m_doc.number(j);
        } else if constexpr (std::is_same_v<T, config::Duration>) {
            std::int64_t ns = 0;
            if (!decode(name, j, ns)) {
                return false;
            }
            v = std::chrono::duration_cast<config::Duration>(std::chrono::nanoseconds(ns));
        } else {
            static_assert(std::is_integral_v<T>);
            if (m_doc.kind(j) == Kind::unsigned_) {
                auto u = m_doc.unsigned_integer(j);
                if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
                    fail(name, "out of range");
                    return false;
                }
                v = static_cast<T>(u);
            } else if (m_doc.kind(j) == Kind::integer) {
                auto s = m_doc.integer(j);
                if (s < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                    (s > 0 && static_cast<std::uint64_t>(s) >
                                  static_cast<std::uint64_t>(std::numeric_limits<T>::max()))) {
                    fail(name, "out of range");
                    return false;
                }
                v = static_cast<T>(s);
            } else {
                fail(name, "not an integer");
                return false;
            }
        }
        return true;
    }

    const proto::JsonTree& m_doc;
    Index m_in;
    Index m_hint = 0;  // members are read in the order they were written
    core::TimePoint m_at;
    std::string m_path;
    std::string& m_error;
    int m_version;
};

// Writes the members `name`, `value`, ... into the object open in `out`, in order.
void members(proto::JsonWriter&) {}
template <class Value, class... Rest>
void members(proto::JsonWriter& out, const char* name, const Value& value, const Rest&... rest) {
    out.key(name);
    out.value(value);
    members(out, rest...);
}

// Writes the list `name`: an object for each of `items`, its members by `write`.
template <class Items, class Write>
void list(proto::JsonWriter& out, const char* name, const Items& items, Write&& write) {
    out.key(name);
    out.begin_array();
    for (const auto& item : items) {
        out.begin_object();
        write(item);
        out.end_object();
    }
    out.end_array();
}

// Reads each object of the list `name` of the document with `read`, until the first
// error.
template <class Read>
void each_entry(const proto::JsonTree& doc, const char* name, std::string& error, Read&& read) {
    const proto::JsonTree::Index root = proto::JsonTree::root();
    const proto::JsonTree::Index list = doc.find(root, name);
    if (error.empty() && (list == doc.end(root) || !doc.is_array(list))) {
        error = std::string(name) + ": not a list";
    }
    if (!error.empty()) {
        return;
    }
    for (auto e = doc.first(list); e != doc.end(list); e = doc.next(e)) {
        if (!doc.is_object(e)) {
            error = std::string(name) + ": an entry is not an object";
            return;
        }
        Reader r(doc, e, core::TimePoint{}, std::string(name) + ".", error);
        read(r);
        if (!error.empty()) {
            return;
        }
    }
}

}  // namespace

std::string write_state(core::Supervisor& supervisor, const DaemonFacts& facts, core::TimePoint now,
                        int version) {
    if (version == 0) {
        version = core::k_state_version;
    }
    std::string text;
    text.reserve(1024 + supervisor.size() * 1536);
    proto::JsonWriter out(text);
    out.begin_object();
    members(
        out, "format", k_format, "version", version, "from", facts.from_version, "saved_at",
        now.time_since_epoch().count() < 0 ? std::int64_t{0} : ns_between(core::TimePoint{}, now));
    out.key("daemon");
    out.begin_object();
    members(out, "started_wall", facts.started_wall, "started_ns", facts.started_ns,
            "orphans_reaped", facts.orphans_reaped);
    out.end_object();
    list(out, "fds", facts.fds, [&](const KeptFd& k) {
        members(out, "role", k.role, "fd", k.fd, "service", k.service, "run", k.run, "pending",
                k.pending, "path", k.path);
    });
    list(out, "leftovers", facts.leftovers, [&](const LeftoverFact& l) {
        members(out, "pgid", l.pgid, "kill_in", l.kill_in_ns, "killed", l.killed);
    });
    list(out, "scaled", facts.scaled, [&](const ScaledFact& f) {
        members(out, "file", f.file, "file_count", f.file_count, "count", f.count);
    });
    list(out, "cgroup_runs", facts.cgroup_runs, [&](const CgroupRunFact& c) {
        members(out, "service", c.service, "usage_usec", c.usage_usec, "oom_kill", c.oom_kill);
    });
    if (version >= 3) {
        write_clients(out, facts.clients);
    }
    out.key("core");
    out.begin_object();
    Writer writer(out, now, version);
    supervisor.persist(writer);
    out.end_object();
    out.end_object();
    return text;
}

std::expected<DaemonFacts, std::string> read_facts(const proto::JsonTree& doc) {
    std::string error;
    if (!doc.is_object(proto::JsonTree::root())) {
        return std::unexpected("the state is not a JSON object");
    }
    Reader top(doc, proto::JsonTree::root(), core::TimePoint{}, "", error);
    std::string format;
    int version = 0;
    top.value("format", format);
    if (error.empty() && format != k_format) {
        return std::unexpected("not a pkit state file");
    }
    top.value("version", version);
    if (error.empty() &&
        (version < core::k_oldest_state_version || version > core::k_state_version)) {
        return std::unexpected("state version " + std::to_string(version) + ", this pkitd reads " +
                               std::to_string(core::k_oldest_state_version) + " to " +
                               std::to_string(core::k_state_version));
    }
    DaemonFacts facts;
    facts.version = version;
    top.value("from", facts.from_version);
    top.value("saved_at", facts.saved_ns);
    top.object("daemon", [&](Reader& d) {
        d.value("started_wall", facts.started_wall);
        d.value("started_ns", facts.started_ns);
        d.value("orphans_reaped", facts.orphans_reaped);
    });
    each_entry(doc, "fds", error, [&](Reader& r) {
        KeptFd k;
        r.value("role", k.role);
        r.value("fd", k.fd);
        r.value("service", k.service);
        r.value("run", k.run);
        r.value("pending", k.pending);
        r.value("path", k.path);
        if (k.fd < 0) {
            r.fail("fd", "negative");
        }
        facts.fds.push_back(std::move(k));
    });
    each_entry(doc, "leftovers", error, [&](Reader& r) {
        LeftoverFact l;
        r.value("pgid", l.pgid);
        r.value("kill_in", l.kill_in_ns);
        r.value("killed", l.killed);
        if (l.pgid <= 1) {
            r.fail("pgid", "not a process group");
        }
        facts.leftovers.push_back(l);
    });
    // Version 2 added the counts `scale` set and what runs read from their cgroups; a
    // version 1 state has neither.
    if (version >= 2) {
        each_entry(doc, "scaled", error, [&](Reader& r) {
            ScaledFact f;
            r.value("file", f.file);
            r.value("file_count", f.file_count);
            r.value("count", f.count);
            if (f.file.empty() || f.file.find('@') != std::string::npos) {
                r.fail("file", "not a service file's name");
            } else if (f.file_count < 1 || f.file_count > k_max_scale) {
                r.fail("file_count", "out of range");
            } else if (f.count < 1 || f.count > k_max_scale) {
                r.fail("count", "out of range");
            }
            facts.scaled.push_back(std::move(f));
        });
        each_entry(doc, "cgroup_runs", error, [&](Reader& r) {
            CgroupRunFact c;
            r.value("service", c.service);
            r.value("usage_usec", c.usage_usec);
            r.value("oom_kill", c.oom_kill);
            facts.cgroup_runs.push_back(std::move(c));
        });
    }
    // Version 3 added the client connections.
    if (version >= 3 && error.empty()) {
        error = read_clients(doc, facts.clients);
    }
    if (!error.empty()) {
        return std::unexpected(error);
    }
    return facts;
}

std::vector<ScaledFact> apply_scaled(const std::vector<ScaledFact>& scaled, config::Tree& tree) {
    std::vector<ScaledFact> applied;
    for (const ScaledFact& f : scaled) {
        if (config::count_instances(tree, f.file) == f.file_count) {
            config::set_instances(tree, f.file, f.count);
            applied.push_back(f);
        }
    }
    return applied;
}

std::expected<void, std::string> apply_state(const proto::JsonTree& doc,
                                             core::Supervisor& supervisor, core::TimePoint now) {
    auto facts = read_facts(doc);
    if (!facts) {
        return std::unexpected(facts.error());
    }
    // The monotonic clock goes on across the exec: the hand-over's moment is exact. One
    // that lies ahead of now cannot be, and the resume's moment stands in for it.
    core::TimePoint saved = facts->saved_at(now);
    std::string error;
    const proto::JsonTree::Index root = proto::JsonTree::root();
    const proto::JsonTree::Index core_part = doc.find(root, "core");
    if (core_part == doc.end(root) || !doc.is_object(core_part)) {
        return std::unexpected("core: not an object");
    }
    Reader reader(doc, core_part, saved, "core.", error, facts->version);
    supervisor.persist(reader);
    if (!error.empty()) {
        return std::unexpected(error);
    }
    return {};
}

}  // namespace pkit::shell::upgrade
