#include "proto/status_rows.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "proto/json_scan.hpp"
#include "proto/status_members.hpp"

namespace pkit::proto {
namespace {

// One scalar as nlohmann's SAX interface hands it over.
struct Scalar {
    enum class Kind { null, boolean, integer, floating, string };
    Kind kind = Kind::null;
    bool boolean = false;
    std::int64_t integer = 0;  // also unsigned values up to INT64_MAX
    double floating = 0;
    std::string* string = nullptr;
};

template <typename T>
inline constexpr bool k_object_member =
    std::is_same_v<T, ExitInfo> || std::is_same_v<T, HealthInfo> || std::is_same_v<T, Resources> ||
    std::is_same_v<T, Requested<Resources>> || std::is_same_v<T, ScheduleInfo> ||
    std::is_same_v<T, LogFileInfo> || std::is_same_v<T, ResourceLimitsInfo> ||
    std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<LimitNotApplied>>;

// Stores `value` in `member` when it has the member's type. A null leaves a plain
// member as it is (as field_from_json does) and clears an optional one.
template <typename T>
bool assign(T& member, Scalar& value) {
    using Kind = Scalar::Kind;
    if (value.kind == Kind::null) {
        if constexpr (requires { member.reset(); }) {
            member.reset();
        } else if constexpr (std::is_same_v<T, Requested<Resources>>) {
            member.asked = true;
            member.value.reset();
        }
        return true;
    }
    if constexpr (requires { member.has_value(); }) {
        typename T::value_type inner{};
        if (!assign(inner, value)) {
            return false;
        }
        member = std::move(inner);
        return true;
    } else if constexpr (k_object_member<T>) {
        return false;  // an object member given a scalar
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (value.kind != Kind::string) {
            return false;
        }
        member = std::move(*value.string);
        return true;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (value.kind != Kind::boolean) {
            return false;
        }
        member = value.boolean;
        return true;
    } else if constexpr (std::is_same_v<T, double>) {
        if (value.kind == Kind::integer) {
            member = static_cast<double>(value.integer);
        } else if (value.kind == Kind::floating) {
            member = value.floating;
        } else {
            return false;
        }
        return true;
    } else {
        static_assert(std::is_integral_v<T>);
        if (value.kind != Kind::integer || value.integer < std::numeric_limits<T>::min() ||
            value.integer > std::numeric_limits<T>::max()) {
            return false;
        }
        member = static_cast<T>(value.integer);
        return true;
    }
}

// Where the scanner is: the object or array it is in.
enum class Place {
    top,
    result,
    services,
    service,
    exit,
    health,
    resources,
    schedule,
    log_file,
    limits,       // resource_limits
    applied,      // resource_limits.applied: strings
    not_applied,  // resource_limits.not_applied: objects
    not_applied_entry,
    security,  // security: strings
    skip
};

// Advice only: where the kernel has no transparent huge pages, nothing changes.
void ask_huge_pages(void* begin, std::size_t bytes) {
    constexpr std::uintptr_t k_huge = 2 * 1024 * 1024;
    const auto from = (reinterpret_cast<std::uintptr_t>(begin) + k_huge - 1) & ~(k_huge - 1);
    const auto to = (reinterpret_cast<std::uintptr_t>(begin) + bytes) & ~(k_huge - 1);
    if (to > from) {
        ::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
    }
}

class RowsReader : public nlohmann::json_sax<json> {
public:
    // Room for `expected` rows up front: growing a vector of ~760-byte rows by doubling
    // copies each row into fresh pages, and on a VM a page fault costs ~25 us. A large
    // reservation (10,000 rows: 7.6 MB) asks for transparent huge pages, where the
    // kernel gives them on request: a fault a 2 MiB page instead of one a 4 KiB page.
    explicit RowsReader(std::size_t expected) {
        m_rows.reserve(expected);
        ask_huge_pages(m_rows.data(), m_rows.capacity() * sizeof(ServiceStatus));
    }

    bool null() override { return scalar(Scalar{}); }
    bool boolean(bool value) override {
        return scalar(Scalar{.kind = Scalar::Kind::boolean, .boolean = value});
    }
    bool number_integer(number_integer_t value) override {
        return scalar(Scalar{.kind = Scalar::Kind::integer, .integer = value});
    }
    bool number_unsigned(number_unsigned_t value) override {
        if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return scalar(
                Scalar{.kind = Scalar::Kind::floating, .floating = static_cast<double>(value)});
        }
        return scalar(
            Scalar{.kind = Scalar::Kind::integer, .integer = static_cast<std::int64_t>(value)});
    }
    bool number_float(number_float_t value, const string_t&) override {
        return scalar(Scalar{.kind = Scalar::Kind::floating, .floating = value});
    }
    bool string(string_t& value) override {
        return scalar(Scalar{.kind = Scalar::Kind::string, .string = &value});
    }
    bool binary(binary_t&) override { return fail("binary values are not JSON"); }

    bool key(string_t& value) override {
        m_key = std::move(value);
        return true;
    }

    bool start_object(std::size_t) override {
        if (m_places.empty()) {
            m_places.push_back(Place::top);
            return true;
        }
        Place place = Place::skip;
        switch (m_places.back()) {
            case Place::top:
                place = m_key == "result" ? Place::result : Place::skip;
                break;
            case Place::services:
                m_rows.emplace_back();
                m_named = m_stated = false;
                place = Place::service;
                break;
            case Place::service:
                place = service_object();
                break;
            case Place::not_applied:
                m_rows.back().resource_limits->not_applied.emplace_back();
                place = Place::not_applied_entry;
                break;
            case Place::applied:
                return fail("\"applied\" has the wrong type in a status row");
            case Place::security:
                return fail("\"security\" has the wrong type in a status row");
            default:
                break;
        }
        if (place == Place::skip && known_member(m_places.back())) {
            return fail("\"" + m_key + "\" has the wrong type in a status row");
        }
        if (place == Place::result) {
            m_result = true;
        }
        return enter(place);
    }

    bool end_object() override {
        if (m_places.back() == Place::service && !(m_named && m_stated)) {
            return fail("a status row lacks its \"name\" or \"state\"");
        }
        m_places.pop_back();
        return true;
    }

    bool start_array(std::size_t) override {
        if (m_places.empty()) {
            return fail("the reply is not a JSON object");
        }
        Place where = m_places.back();
        if (where == Place::result && m_key == "services") {
            m_services = true;
            return enter(Place::services);
        }
        if (where == Place::limits && (m_key == "applied" || m_key == "not_applied")) {
            ResourceLimitsInfo& limits = *m_rows.back().resource_limits;
            if (m_key == "applied") {
                limits.applied.clear();
                return enter(Place::applied);
            }
            limits.not_applied.clear();
            return enter(Place::not_applied);
        }
        if (where == Place::service && m_key == "security") {
            m_rows.back().security.emplace();
            return enter(Place::security);
        }
        if (where == Place::applied || where == Place::not_applied || where == Place::security) {
            return fail("\"resource_limits\" has the wrong type in a status row");
        }
        if (known_member(where)) {
            return fail("\"" + m_key + "\" has the wrong type in a status row");
        }
        return enter(Place::skip);
    }

    bool end_array() override {
        m_places.pop_back();
        return true;
    }

    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return fail("the reply is not a JSON object");
    }

    std::expected<std::optional<std::vector<ServiceStatus>>, std::string> result() && {
        if (!m_error.empty()) {
            return std::unexpected(std::move(m_error));
        }
        if (!m_ok) {
            return std::nullopt;  // an error reply or a stream line: parse_reply's
        }
        if (!m_result || !m_services) {
            return std::unexpected("the result has no \"services\" array");
        }
        return std::move(m_rows);
    }

private:
    bool fail(std::string message) {
        if (m_error.empty()) {
            m_error = std::move(message);
        }
        return false;
    }

    bool enter(Place place) {
        m_places.push_back(place);
        return true;
    }

    // The object member of a status row that starts here, or skip for an unknown key.
    Place service_object() {
        ServiceStatus& row = m_rows.back();
        if (m_key == "last_exit") {
            row.last_exit.emplace();
            return Place::exit;
        }
        if (m_key == "health") {
            row.health.emplace();
            return Place::health;
        }
        if (m_key == "resources") {
            row.resources.asked = true;
            row.resources.value.emplace();
            return Place::resources;
        }
        if (m_key == "schedule") {
            row.schedule.emplace();
            return Place::schedule;
        }
        if (m_key == "log_file") {
            row.log_file.emplace();
            return Place::log_file;
        }
        if (m_key == "resource_limits") {
            row.resource_limits.emplace();
            return Place::limits;
        }
        return Place::skip;
    }

    // Whether m_key names a member of the status object at `where` (false elsewhere).
    bool known_member(Place where) {
        bool found = false;
        if (m_rows.empty()) {
            return false;
        }
        auto look = [&](const char* name, const auto&) {
            found = found || (name[0] == m_key[0] && m_key == name);
        };
        ServiceStatus& row = m_rows.back();
        switch (where) {
            case Place::service:
                detail::service_members(row, look);
                break;
            case Place::exit:
                detail::exit_members(*row.last_exit, look);
                break;
            case Place::health:
                detail::health_members(*row.health, look);
                break;
            case Place::resources:
                detail::resources_members(*row.resources.value, look);
                break;
            case Place::schedule:
                detail::schedule_members(*row.schedule, look);
                break;
            case Place::log_file:
                detail::log_file_members(*row.log_file, look);
                break;
            case Place::limits:
                detail::limits_members(*row.resource_limits, look);
                break;
            case Place::not_applied_entry:
                detail::not_applied_members(row.resource_limits->not_applied.back(), look);
                break;
            default:
                break;
        }
        return found;
    }

    // Stores `value` in the member m_key names, if any, of `target`.
    template <typename S, typename Members>
    bool set(S& target, Members members, Scalar& value) {
        bool ok = true;
        if (m_key.empty()) {
            return true;
        }
        members(target, [&](const char* name, auto& member) {
            if (name[0] == m_key[0] && m_key == name) {
                ok = assign(member, value);
            }
        });
        return ok || fail("\"" + m_key + "\" has the wrong type in a status row");
    }

    bool scalar(Scalar value) {
        if (m_places.empty()) {
            return fail("the reply is not a JSON object");
        }
        ServiceStatus* row = m_rows.empty() ? nullptr : &m_rows.back();
        auto each = [](auto& v, auto&& f) { detail::service_members(v, f); };
        switch (m_places.back()) {
            case Place::top:
                if (m_key == "ok") {
                    if (value.kind != Scalar::Kind::boolean) {
                        return fail("\"ok\" is not a boolean");
                    }
                    m_ok = value.boolean;
                }
                return true;
            case Place::services:
                return fail("a status row is not an object");
            case Place::service:
                if (m_key == "name" && value.kind == Scalar::Kind::string) {
                    m_named = true;
                } else if (m_key == "state" && value.kind == Scalar::Kind::string) {
                    m_stated = true;
                }
                return set(*row, each, value);
            case Place::exit:
                return set(
                    *row->last_exit, [](auto& v, auto&& f) { detail::exit_members(v, f); }, value);
            case Place::health:
                return set(
                    *row->health, [](auto& v, auto&& f) { detail::health_members(v, f); }, value);
            case Place::resources:
                return set(
                    *row->resources.value,
                    [](auto& v, auto&& f) { detail::resources_members(v, f); }, value);
            case Place::schedule:
                return set(
                    *row->schedule, [](auto& v, auto&& f) { detail::schedule_members(v, f); },
                    value);
            case Place::log_file:
                return set(
                    *row->log_file, [](auto& v, auto&& f) { detail::log_file_members(v, f); },
                    value);
            case Place::limits:
                return set(
                    *row->resource_limits, [](auto& v, auto&& f) { detail::limits_members(v, f); },
                    value);
            case Place::applied:
                if (value.kind != Scalar::Kind::string) {
                    return fail("\"applied\" has the wrong type in a status row");
                }
                row->resource_limits->applied.push_back(std::move(*value.string));
                return true;
            case Place::not_applied:
                return fail("\"not_applied\" has the wrong type in a status row");
            case Place::security:
                if (value.kind != Scalar::Kind::string) {
                    return fail("\"security\" has the wrong type in a status row");
                }
                row->security->push_back(std::move(*value.string));
                return true;
            case Place::not_applied_entry:
                return set(
                    row->resource_limits->not_applied.back(),
                    [](auto& v, auto&& f) { detail::not_applied_members(v, f); }, value);
            case Place::result:
            case Place::skip:
                return true;
        }
        return true;
    }

    std::vector<Place> m_places;
    std::string m_key;
    std::vector<ServiceStatus> m_rows;
    bool m_ok = false;
    bool m_result = false;
    bool m_services = false;
    bool m_named = false;
    bool m_stated = false;
    std::string m_error;
};

// About how many rows `line` holds, for the reservation: every row has a "name" member
// (an estimate only: the same bytes inside a string value count too), and no more than
// k_most_reserved, so that a reply of odd text cannot make a large reservation.
std::size_t count_rows(std::string_view line) {
    constexpr std::string_view k_member = "\"name\":";
    constexpr std::size_t k_most_reserved = 65536;
    std::size_t count = 0;
    for (auto at = line.find(k_member); at != std::string_view::npos && count < k_most_reserved;
         at = line.find(k_member, at + k_member.size())) {
        ++count;
    }
    return count;
}

}  // namespace

std::expected<std::optional<std::vector<ServiceStatus>>, std::string> parse_status_rows(
    std::string_view line) noexcept {
    try {
        RowsReader reader(count_rows(line));
        scan_json(line, reader);
        return std::move(reader).result();
    } catch (...) {
        return std::unexpected("the reply could not be processed");
    }
}

}  // namespace pkit::proto
