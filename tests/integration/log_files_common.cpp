#include "tests/integration/log_files_common.hpp"

#include <filesystem>

namespace pkit::itest {

std::string numbered_script(long from, long to, bool paced) {
    return "i=" + std::to_string(from - 1) + "; while [ $i -lt " + std::to_string(to) +
           " ]; do i=$((i+1)); echo \"n $i "
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
           "\"; " +
           std::string(paced ? "[ $((i % 100)) -eq 0 ] && sleep 0.005; " : "") + "done";
}

std::string numbered_lines(long from, long to, const std::string& then) {
    return sh_command(numbered_script(from, to) + "; " + then);
}

std::vector<long> numbers_in_files(const std::string& path, int keep) {
    std::vector<std::string> files;
    for (int k = keep; k >= 1; --k) {
        files.push_back(path + "." + std::to_string(k));
    }
    files.push_back(path);
    std::vector<long> numbers;
    for (const std::string& file : files) {
        for (const std::string& line : read_lines(file)) {
            std::size_t at = line.find(" n ");
            if (line.starts_with("n ")) {
                at = 0;
            } else if (at != std::string::npos) {
                at += 1;
            } else {
                continue;
            }
            numbers.push_back(std::stol(line.substr(at + 2)));
        }
    }
    return numbers;
}

bool contiguous(const std::vector<long>& numbers, long first, long last) {
    if (numbers.size() != static_cast<std::size_t>(last - first + 1)) {
        return false;
    }
    for (std::size_t k = 0; k < numbers.size(); ++k) {
        if (numbers[k] != first + static_cast<long>(k)) {
            return false;
        }
    }
    return true;
}

long dropped_notices(const std::string& path) {
    long total = 0;
    const std::string mark = "pkitd: ";
    for (const std::string& line : read_lines(path)) {
        std::size_t at = line.find(mark);
        if (at != std::string::npos && line.ends_with(" lines dropped")) {
            total += std::stol(line.substr(at + mark.size()));
        }
    }
    return total;
}

json status_of(Client& client, const std::string& name) {
    json reply = client.request({{"cmd", "status"}, {"services", {name}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["result"]["services"][0];
}

}  // namespace pkit::itest
