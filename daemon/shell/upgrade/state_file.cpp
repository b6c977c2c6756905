#include "daemon/shell/upgrade/state_file.hpp"

#include <functional>
#include <limits>
#include <optional>
#include <type_traits>

#include "config/instances.hpp"
#include "daemon/core/persist.hpp"

namespace pkit::shell::upgrade {

using nlohmann::json;

namespace {

constexpr const char* k_format = "pkit-state";
// SPEC §13: a file's instances, 1 to 1000.
constexpr std::uint64_t k_max_scale = 1000;

std::int64_t ns_between(core::TimePoint from, core::TimePoint to) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

// The writer: every field into a JSON object, times relative to the hand-over.
class Writer {
public:
    Writer(json& out, core::TimePoint at) : m_out(out), m_at(at) {}
    bool loading() const { return false; }
    int version() const { return core::k_state_version; }
    void fail(const char*, const char*) {}

    template <class T>
    void value(const char* name, T& v) {
        m_out[name] = encode(v);
    }
    template <class T>
    void value(const char* name, std::optional<T>& v) {
        m_out[name] = v ? encode(*v) : json(nullptr);
    }
    void time(const char* name, core::TimePoint& t) { m_out[name] = ns_between(m_at, t); }
    void time(const char* name, core::OptionalTime& t) {
        m_out[name] = t ? json(ns_between(m_at, *t)) : json(nullptr);
    }
    void time(const char* name, std::optional<core::TimePoint>& t) {
        m_out[name] = t ? json(ns_between(m_at, *t)) : json(nullptr);
    }
    template <class E>
    void enumeration(const char* name, E& v, E /*last*/) {
        m_out[name] = static_cast<int>(v);
    }
    void times(const char* name, std::vector<core::TimePoint>& ts) {
        json list = json::array();
        for (core::TimePoint t : ts) {
            list.push_back(ns_between(m_at, t));
        }
        m_out[name] = std::move(list);
    }
    void lines(const char* name, std::vector<core::TailLine>& ls) {
        json list = json::array();
        for (const core::TailLine& l : ls) {
            list.push_back(
                {{"stream", static_cast<int>(l.stream)}, {"at", l.at}, {"text", l.text}});
        }
        m_out[name] = std::move(list);
    }
    template <class Walk>
    void object(const char* name, Walk&& walk) {
        json nested = json::object();
        Writer w(nested, m_at);
        walk(w);
        m_out[name] = std::move(nested);
    }
    template <class NameOf, class Walk>
    void each(const char* name, std::size_t count, NameOf&& name_of, Walk&& walk) {
        json all = json::object();
        for (std::size_t i = 0; i < count; ++i) {
            json nested = json::object();
            Writer w(nested, m_at);
            walk(i, w);
            all[name_of(i)] = std::move(nested);
        }
        m_out[name] = std::move(all);
    }

private:
    template <class T>
    static json encode(const T& v) {
        if constexpr (std::is_same_v<T, config::Duration>) {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(v).count();
        } else {
            return v;
        }
    }

    json& m_out;
    core::TimePoint m_at;
};

// The reader: every field from a JSON object, strictly. The first error is kept with
// the path to its field, and every later read is skipped.
class Reader {
public:
    Reader(const json& in, core::TimePoint at, std::string path, std::string& error,
           int version = core::k_state_version)
        : m_in(in), m_at(at), m_path(std::move(path)), m_error(error), m_version(version) {}
    bool loading() const { return true; }
    int version() const { return m_version; }
    void fail(const char* name, const char* why) {
        if (m_error.empty()) {
            m_error = m_path + name + ": " + why;
        }
    }

    template <class T>
    void value(const char* name, T& v) {
        if (const json* j = field(name)) {
            decode(name, *j, v);
        }
    }
    template <class T>
    void value(const char* name, std::optional<T>& v) {
        if (const json* j = field(name)) {
            if (j->is_null()) {
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
        if (const json* j = field(name); j && decode(name, *j, ns) && moment(name, ns)) {
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
        if (const json* j = field(name); j && decode(name, *j, raw)) {
            if (raw < 0 || raw > static_cast<int>(last)) {
                fail(name, "out of range");
            } else {
                v = static_cast<E>(raw);
            }
        }
    }
    void times(const char* name, std::vector<core::TimePoint>& ts) {
        const json* j = field(name);
        if (j == nullptr || !array(name, *j)) {
            return;
        }
        ts.clear();
        for (const json& e : *j) {
            std::int64_t ns = 0;
            if (!decode(name, e, ns) || !moment(name, ns)) {
                return;
            }
            ts.push_back(m_at + std::chrono::nanoseconds(ns));
        }
    }
    void lines(const char* name, std::vector<core::TailLine>& ls) {
        const json* j = field(name);
        if (j == nullptr || !array(name, *j)) {
            return;
        }
        ls.clear();
        for (const json& e : *j) {
            if (!e.is_object()) {
                fail(name, "a line is not an object");
                return;
            }
            Reader r(e, m_at, m_path + name + ".", m_error, m_version);
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
        const json* j = field(name);
        if (j == nullptr) {
            return;
        }
        if (!j->is_object()) {
            fail(name, "not an object");
            return;
        }
        Reader r(*j, m_at, m_path + name + ".", m_error, m_version);
        walk(r);
    }
    template <class NameOf, class Walk>
    void each(const char* name, std::size_t count, NameOf&& name_of, Walk&& walk) {
        const json* j = field(name);
        if (j == nullptr) {
            return;
        }
        if (!j->is_object()) {
            fail(name, "not an object");
            return;
        }
        for (std::size_t i = 0; i < count && m_error.empty(); ++i) {
            std::string key = name_of(i);
            auto it = j->find(key);
            if (it == j->end() || !it->is_object()) {
                fail(name, ("has no entry for " + key).c_str());
                return;
            }
            Reader r(*it, m_at, m_path + name + "." + key + ".", m_error, m_version);
            walk(i, r);
        }
        if (m_error.empty() && j->size() != count) {
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
    const json* field(const char* name) {
        if (!m_error.empty()) {
            return nullptr;
        }
        auto it = m_in.find(name);
        if (it == m_in.end()) {
            fail(name, "missing");
            return nullptr;
        }
        return &*it;
    }
    bool array(const char* name, const json& j) {
        if (!j.is_array()) {
            fail(name, "not a list");
            return false;
        }
        return true;
    }
    template <class T>
    bool decode(const char* name, const json& j, T& v) {
        if constexpr (std::is_same_v<T, bool>) {
            if (!j.is_boolean()) {
                fail(name, "not a boolean");
                return false;
            }
            v = j.get<bool>();
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!j.is_string()) {
                fail(name, "not a string");
                return false;
            }
            v = j.get<std::string>();
        } else if constexpr (std::is_same_v<T, double>) {
            if (!j.is_number()) {
                fail(name, "not a number");
                return false;
            }
            v = j.get<double>();
        } else if constexpr (std::is_same_v<T, config::Duration>) {
            std::int64_t ns = 0;
            if (!decode(name, j, ns)) {
                return false;
            }
            v = std::chrono::duration_cast<config::Duration>(std::chrono::nanoseconds(ns));
        } else {
            static_assert(std::is_integral_v<T>);
            if (j.is_number_unsigned()) {
                auto u = j.get<std::uint64_t>();
                if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
                    fail(name, "out of range");
                    return false;
                }
                v = static_cast<T>(u);
            } else if (j.is_number_integer()) {
                auto s = j.get<std::int64_t>();
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

    const json& m_in;
    core::TimePoint m_at;
    std::string m_path;
    std::string& m_error;
    int m_version;
};

// Reads each object of the list `name` of `doc` with `read`, until the first error.
template <class Read>
void each_entry(const json& doc, const char* name, std::string& error, Read&& read) {
    auto it = doc.find(name);
    if (error.empty() && (it == doc.end() || !it->is_array())) {
        error = std::string(name) + ": not a list";
    }
    if (!error.empty()) {
        return;
    }
    for (const json& e : *it) {
        if (!e.is_object()) {
            error = std::string(name) + ": an entry is not an object";
            return;
        }
        Reader r(e, core::TimePoint{}, std::string(name) + ".", error);
        read(r);
        if (!error.empty()) {
            return;
        }
    }
}

}  // namespace

json write_state(core::Supervisor& supervisor, const DaemonFacts& facts, core::TimePoint now) {
    json doc = json::object();
    doc["format"] = k_format;
    doc["version"] = core::k_state_version;
    doc["from"] = facts.from_version;
    doc["saved_at"] = now.time_since_epoch().count() < 0 ? 0 : ns_between(core::TimePoint{}, now);
    json daemon = json::object();
    daemon["started_wall"] = facts.started_wall;
    daemon["started_ns"] = facts.started_ns;
    daemon["orphans_reaped"] = facts.orphans_reaped;
    doc["daemon"] = std::move(daemon);
    json fds = json::array();
    for (const KeptFd& k : facts.fds) {
        fds.push_back({{"role", k.role},
                       {"fd", k.fd},
                       {"service", k.service},
                       {"run", k.run},
                       {"pending", k.pending},
                       {"path", k.path}});
    }
    doc["fds"] = std::move(fds);
    json leftovers = json::array();
    for (const LeftoverFact& l : facts.leftovers) {
        leftovers.push_back({{"pgid", l.pgid}, {"kill_in", l.kill_in_ns}, {"killed", l.killed}});
    }
    doc["leftovers"] = std::move(leftovers);
    json scaled = json::array();
    for (const ScaledFact& f : facts.scaled) {
        scaled.push_back({{"file", f.file}, {"file_count", f.file_count}, {"count", f.count}});
    }
    doc["scaled"] = std::move(scaled);
    json cgroup_runs = json::array();
    for (const CgroupRunFact& c : facts.cgroup_runs) {
        cgroup_runs.push_back({{"service", c.service},
                               {"usage_usec", c.usage_usec ? json(*c.usage_usec) : json()},
                               {"oom_kill", c.oom_kill ? json(*c.oom_kill) : json()}});
    }
    doc["cgroup_runs"] = std::move(cgroup_runs);
    json core_part = json::object();
    Writer writer(core_part, now);
    supervisor.persist(writer);
    doc["core"] = std::move(core_part);
    return doc;
}

std::expected<DaemonFacts, std::string> read_facts(const json& doc) {
    std::string error;
    if (!doc.is_object()) {
        return std::unexpected("the state is not a JSON object");
    }
    Reader top(doc, core::TimePoint{}, "", error);
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
    top.value("from", facts.from_version);
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
    // Counts that `scale` set came with state version 2; a version 1 state has none.
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
    }
    // What runs read from their cgroups came with state version 2 too.
    if (version >= 2) {
        each_entry(doc, "cgroup_runs", error, [&](Reader& r) {
            CgroupRunFact c;
            r.value("service", c.service);
            r.value("usage_usec", c.usage_usec);
            r.value("oom_kill", c.oom_kill);
            facts.cgroup_runs.push_back(std::move(c));
        });
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

std::expected<void, std::string> apply_state(const json& doc, core::Supervisor& supervisor,
                                             core::TimePoint now) {
    auto facts = read_facts(doc);
    if (!facts) {
        return std::unexpected(facts.error());
    }
    std::string error;
    Reader top(doc, core::TimePoint{}, "", error);
    std::int64_t saved_ns = 0;
    int version = 0;
    top.value("saved_at", saved_ns);
    top.value("version", version);  // read_facts has checked it
    // The monotonic clock goes on across the exec: the hand-over's moment is exact. One
    // that lies ahead of now cannot be, and the resume's moment stands in for it.
    core::TimePoint saved = core::TimePoint{} + std::chrono::nanoseconds(saved_ns);
    if (saved > now || saved_ns < 0) {
        saved = now;
    }
    auto it = doc.find("core");
    if (error.empty() && (it == doc.end() || !it->is_object())) {
        error = "core: not an object";
    }
    if (error.empty()) {
        Reader reader(*it, saved, "core.", error, version);
        supervisor.persist(reader);
    }
    if (!error.empty()) {
        return std::unexpected(error);
    }
    return {};
}

}  // namespace pkit::shell::upgrade
