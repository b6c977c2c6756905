#include "daemon/shell/launch/launch_env.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "config/variables.hpp"

extern char** environ;

namespace pkit::shell {

namespace {

constexpr std::string_view k_blanks = " \t\r";

std::string_view trim(std::string_view text) {
    auto first = text.find_first_not_of(k_blanks);
    if (first == std::string_view::npos) {
        return {};
    }
    auto last = text.find_last_not_of(k_blanks);
    return text.substr(first, last - first + 1);
}

bool valid_key(std::string_view key) {
    if (key.empty()) {
        return false;
    }
    for (char c : key) {
        if (c == '=' || c == ' ' || c == '\t' || c == '\0') {
            return false;
        }
    }
    return true;
}

// Decodes a value after '=': quoted forms as documented on parse_dotenv.
std::expected<std::string, std::string> parse_value(std::string_view raw) {
    raw = trim(raw);
    if (raw.empty()) {
        return std::string{};
    }
    char quote = raw.front();
    if (quote == '\'' || quote == '"') {
        auto close = raw.find(quote, 1);
        if (quote == '"') {
            // Skip escaped quotes when looking for the closing one.
            close = 1;
            while (close < raw.size() && raw[close] != '"') {
                close += raw[close] == '\\' ? 2 : 1;
            }
            if (close >= raw.size()) {
                close = std::string_view::npos;
            }
        }
        if (close == std::string_view::npos) {
            return std::unexpected("unterminated quote");
        }
        auto rest = trim(raw.substr(close + 1));
        if (!rest.empty() && rest.front() != '#') {
            return std::unexpected("text after the closing quote");
        }
        std::string_view body = raw.substr(1, close - 1);
        if (quote == '\'') {
            return std::string(body);
        }
        std::string value;
        for (std::size_t i = 0; i < body.size(); ++i) {
            if (body[i] != '\\' || i + 1 == body.size()) {
                value += body[i];
                continue;
            }
            char next = body[++i];
            value += next == 'n' ? '\n' : next == 't' ? '\t' : next == 'r' ? '\r' : next;
        }
        return value;
    }
    auto comment = raw.find(" #");
    if (comment == std::string_view::npos) {
        comment = raw.find("\t#");
    }
    return std::string(trim(raw.substr(0, comment)));
}

// The value of `key` in `env`, or nullopt.
std::optional<std::string_view> find_variable(const std::vector<std::string>& env,
                                              std::string_view key) {
    for (const auto& entry : env) {
        if (entry.size() > key.size() && entry[key.size()] == '=' &&
            entry.compare(0, key.size(), key) == 0) {
            return std::string_view(entry).substr(key.size() + 1);
        }
    }
    return std::nullopt;
}

// Replaces the definition of `key` in `env`, or appends one.
void set_variable(std::vector<std::string>& env, std::string_view key, std::string_view value) {
    std::string entry;
    entry.reserve(key.size() + 1 + value.size());
    entry.append(key).append(1, '=').append(value);
    for (auto& existing : env) {
        if (existing.size() > key.size() && existing[key.size()] == '=' &&
            existing.compare(0, key.size(), key) == 0) {
            existing = std::move(entry);
            return;
        }
    }
    env.push_back(std::move(entry));
}

std::expected<std::string, int> read_file(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::unexpected(errno);
    }
    std::string text;
    char buffer[4096];
    for (;;) {
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            int error = errno;
            close(fd);
            return std::unexpected(error);
        }
        if (n == 0) {
            break;
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
    close(fd);
    return text;
}

}  // namespace

LaunchFailure make_failure(config::LaunchError kind, std::string_view what,
                           std::string_view reason) {
    std::string message(config::to_string(kind));
    message.append(": ").append(what).append(": ").append(reason);
    return LaunchFailure{kind, std::move(message)};
}

std::expected<std::vector<std::pair<std::string, std::string>>, std::string> parse_dotenv(
    std::string_view text) {
    std::vector<std::pair<std::string, std::string>> pairs;
    std::size_t line_number = 0;
    while (!text.empty()) {
        ++line_number;
        auto end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        if (line.empty() || line.front() == '#') {
            continue;
        }
        if (line.starts_with("export ") || line.starts_with("export\t")) {
            line = trim(line.substr(7));
        }
        auto equals = line.find('=');
        std::string_view key =
            trim(line.substr(0, equals == std::string_view::npos ? line.size() : equals));
        if (equals == std::string_view::npos || !valid_key(key)) {
            return std::unexpected(std::to_string(line_number) + ": expected KEY=VALUE");
        }
        auto value = parse_value(line.substr(equals + 1));
        if (!value) {
            return std::unexpected(std::to_string(line_number) + ": " + value.error());
        }
        pairs.emplace_back(std::string(key), std::move(*value));
    }
    return pairs;
}

std::expected<std::string, LaunchFailure> expand_in(std::string_view text,
                                                    const std::vector<std::string>& env,
                                                    std::string_view what) {
    if (!config::has_variables(text)) {
        return std::string(text);
    }
    auto lookup = [&env](std::string_view name) { return find_variable(env, name); };
    auto expanded = config::expand_variables(text, lookup);
    if (expanded) {
        return std::move(*expanded);
    }
    const config::VariableError& error = expanded.error();
    if (error.kind == config::VariableError::Kind::undefined) {
        return std::unexpected(
            make_failure(config::LaunchError::undefined_variable, error.name,
                         std::string("not set in the run's environment and no default (in ")
                             .append(what)
                             .append(")")));
    }
    // The loader refuses bad syntax; a spec built by other means still fails cleanly.
    return std::unexpected(make_failure(config::LaunchError::other, what, error.message()));
}

namespace {

// Each env_file of `paths` into `env`, its path expanded first.
std::expected<void, LaunchFailure> apply_env_files(const std::vector<std::string>& paths,
                                                   std::vector<std::string>& env) {
    for (const auto& written : paths) {
        auto path = expand_in(written, env, "env_file");
        if (!path) {
            return std::unexpected(std::move(path.error()));
        }
        auto text = read_file(*path);
        if (!text) {
            return std::unexpected(make_failure(config::LaunchError::bad_env_file, *path,
                                                std::strerror(text.error())));
        }
        auto pairs = parse_dotenv(*text);
        if (!pairs) {
            // "LINE: reason" becomes "bad_env_file: PATH:LINE: reason".
            const std::string& error = pairs.error();
            auto split = error.find(": ");
            return std::unexpected(make_failure(config::LaunchError::bad_env_file,
                                                *path + ":" + error.substr(0, split),
                                                error.substr(split + 2)));
        }
        for (const auto& [key, value] : *pairs) {
            set_variable(env, key, value);
        }
    }
    return {};
}

// An env table into `env`, every value expanded from `env` as it was before the table.
std::expected<void, LaunchFailure> apply_env(const std::map<std::string, std::string>& table,
                                             std::vector<std::string>& env) {
    std::vector<std::pair<std::string_view, std::string>> values;
    values.reserve(table.size());
    for (const auto& [key, value] : table) {
        auto expanded = expand_in(value, env, std::string("env.").append(key));
        if (!expanded) {
            return std::unexpected(std::move(expanded.error()));
        }
        values.emplace_back(key, std::move(*expanded));
    }
    for (const auto& [key, value] : values) {
        set_variable(env, key, value);
    }
    return {};
}

}  // namespace

std::expected<std::vector<std::string>, LaunchFailure> build_environment(
    const LaunchRequest& request, const Account* account) {
    const config::ServiceSpec& spec = *request.spec;
    const config::ProcessSpec& process = *spec.process;
    std::vector<std::string> env;
    if (!process.clear_env) {
        for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
            // A name twice in pkitd's environ is kept once, with the value getenv()
            // sees (the first), so that a source below replaces it for good.
            std::string_view text(*entry);
            std::string_view key = text.substr(0, text.find('='));
            if (!find_variable(env, key)) {
                env.emplace_back(text);
            }
        }
    }
    // pkit's own variables first too, so that env_file paths and env values may use
    // them (worker-${PKIT_INSTANCE}.env); they are set again last, over any source.
    const std::string instance = std::to_string(spec.instance == 0 ? 1 : spec.instance);
    const std::string run = std::to_string(request.run);
    auto set_own = [&] {
        set_variable(env, "PKIT_SERVICE", spec.name);
        set_variable(env, "PKIT_INSTANCE", instance);
        set_variable(env, "PKIT_RUN", run);
    };
    set_own();
    if (account != nullptr) {
        set_variable(env, "HOME", account->home);
        set_variable(env, "USER", account->name);
        set_variable(env, "LOGNAME", account->name);
        set_variable(env, "SHELL", account->shell);
    }
    std::expected<void, LaunchFailure> applied;
    if (request.daemon != nullptr) {
        applied = apply_env_files(request.daemon->env_files, env);
        if (applied) {
            applied = apply_env(request.daemon->env, env);
        }
    }
    if (applied) {
        applied = apply_env_files(process.env_files, env);
    }
    if (applied) {
        applied = apply_env(process.env, env);
    }
    if (!applied) {
        return std::unexpected(std::move(applied.error()));
    }
    set_own();
    for (const auto& [key, value] : request.extra_env) {
        set_variable(env, key, value);
    }
    return env;
}

std::expected<std::string, LaunchFailure> resolve_program(const std::string& name,
                                                          const std::vector<std::string>& env,
                                                          const std::optional<std::string>& cwd) {
    if (name.find('/') != std::string::npos) {
        return name;
    }
    std::string_view path = k_default_path;
    for (const auto& entry : env) {
        if (entry.starts_with("PATH=")) {
            path = std::string_view(entry).substr(5);
        }
    }
    std::optional<std::string> not_executable;
    std::string candidate;
    std::string probe;
    while (!name.empty()) {
        auto colon = path.find(':');
        std::string_view dir = path.substr(0, colon);
        candidate.assign(dir.empty() ? std::string_view(".") : dir).append("/").append(name);
        const std::string* checked = &candidate;
        if (candidate.front() != '/' && cwd) {
            probe.assign(*cwd).append("/").append(candidate);
            checked = &probe;
        }
        struct stat info {};
        if (stat(checked->c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
            if (access(checked->c_str(), X_OK) == 0) {
                return candidate;
            }
            if (!not_executable) {
                not_executable = candidate;
            }
        }
        if (colon == std::string_view::npos) {
            break;
        }
        path.remove_prefix(colon + 1);
    }
    if (not_executable) {
        return *not_executable;
    }
    return std::unexpected(
        make_failure(config::LaunchError::not_found, name, std::strerror(ENOENT)));
}

}  // namespace pkit::shell
