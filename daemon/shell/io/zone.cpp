#include "daemon/shell/io/zone.hpp"

#include <cstdlib>
#include <ctime>

namespace pkit::shell {

core::ZoneOffset zone_from_environment() {
    const char* tz = std::getenv("TZ");
    if (tz == nullptr || *tz == '\0') {
        return core::utc_offset;
    }
    ::tzset();
    return [](std::int64_t t) {
        std::time_t at = static_cast<std::time_t>(t);
        std::tm local{};
        if (::localtime_r(&at, &local) == nullptr) {
            return std::int32_t{0};
        }
        return static_cast<std::int32_t>(local.tm_gmtoff);
    };
}

}  // namespace pkit::shell
