// The header from C++ (g++): one translation unit, the header included twice,
// the C API driven through RAII handles as a C++ host would.
#include "telha_jobs.h"
#include "telha_jobs.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

struct QueueFree {
    void operator()(tj_queue *q) const { tj_queue_free(q); }
};
struct JobFree {
    void operator()(tj_job *j) const { tj_job_free(j); }
};
struct ErrorFree {
    void operator()(tj_error *e) const { tj_error_free(e); }
};
using Queue = std::unique_ptr<tj_queue, QueueFree>;
using Job = std::unique_ptr<tj_job, JobFree>;
using Error = std::unique_ptr<tj_error, ErrorFree>;

int passed = 0, failed = 0;

void check(bool ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        std::fprintf(stderr, "  CHECK failed: %s\n", what);
    }
    std::printf("%s test_cxx::%s\n", ok ? "ok  " : "FAIL", what);
}

}  // namespace

int main() {
    char dir[] = "/tmp/tj-cxx-XXXXXX";
    if (!mkdtemp(dir))
        return 2;

    tj_queue *raw = nullptr;
    tj_error *e = nullptr;
    tj_status s = tj_queue_open(dir, nullptr, &raw, &e);
    Error open_err(e);
    Queue q(raw);
    check(s == TJ_STATUS_OK && q, "open_from_cxx");

    const std::string payload = "from C++";
    tj_id id{};
    bool created = false;
    s = tj_queue_enqueue(q.get(), "embed", reinterpret_cast<const uint8_t *>(payload.data()),
                         payload.size(), nullptr, &id, &created, nullptr);
    check(s == TJ_STATUS_OK && created, "enqueue_from_cxx");

    tj_job *jr = nullptr;
    s = tj_queue_lease_next(q.get(), "cxx-worker", nullptr, &jr, nullptr);
    Job job(jr);
    size_t len = 0;
    const uint8_t *p = job ? tj_job_payload(job.get(), &len) : nullptr;
    check(s == TJ_STATUS_OK && job && std::string(reinterpret_cast<const char *>(p), len) == payload,
          "lease_sees_the_payload");

    tj_token t = tj_job_token(job.get());
    check(tj_queue_complete(q.get(), &t, nullptr, 0, nullptr) == TJ_STATUS_OK, "complete_from_cxx");
    e = nullptr;
    s = tj_queue_complete(q.get(), &t, nullptr, 0, &e);
    Error stale(e);
    check(s == TJ_STATUS_ABORTED && stale && std::strlen(tj_error_message(stale.get())) > 0,
          "second_complete_is_aborted_with_a_message");
    check(std::string(tj_status_name(TJ_STATUS_CLOSED)) == "CLOSED", "status_names");

    q.reset();
    std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0)
        std::fprintf(stderr, "could not remove %s\n", dir);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
