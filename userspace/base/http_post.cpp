#include "base/http_post.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <memory>
#include <mutex>

namespace gpuprof {
namespace {

constexpr size_t kReplyBodyLimit = 4096;

// The libcurl functions used, each a member of Curl named as the function
// without its "curl_" prefix, looked up in the loaded library.
#define GP_CURL_FUNCTIONS(X)                                                                        \
  X(easy_init) X(easy_setopt) X(easy_perform) X(easy_getinfo) X(easy_cleanup) X(easy_strerror) \
  X(mime_init) X(mime_addpart) X(mime_name) X(mime_filename) X(mime_data) X(mime_free) X(global_init)

struct Curl {
#define GP_CURL_MEMBER(name) decltype(&curl_##name) name = nullptr;
  GP_CURL_FUNCTIONS(GP_CURL_MEMBER)
#undef GP_CURL_MEMBER
};

Result<const Curl*> load_curl() {
  static std::once_flag once;
  static Curl curl;
  static std::string error;
  std::call_once(once, [] {
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = std::string("cannot load libcurl.so.4 (install libcurl4): ") + dlerror();
      return;
    }
#define GP_CURL_LOOKUP(name)                                                                          \
  curl.name = reinterpret_cast<decltype(curl.name)>(dlsym(lib, "curl_" #name));                      \
  if (!curl.name && error.empty()) error = "libcurl.so.4 has no curl_" #name " (libcurl 7.56 or later needed)";
    GP_CURL_FUNCTIONS(GP_CURL_LOOKUP)
#undef GP_CURL_LOOKUP
    // Once, before any handle: curl_easy_init would do it on first use, on
    // whichever thread, and it is not thread-safe there.
    if (error.empty() && curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) error = "libcurl failed to initialize";
    if (!error.empty()) dlclose(lib);
  });
  if (!error.empty()) return Error(error);
  return &curl;
}

size_t keep_reply(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() < kReplyBodyLimit) body->append(data, std::min(n, kReplyBodyLimit - body->size()));
  return n;
}

}  // namespace

Result<HttpReply> http_post_multipart(const std::string& url, const MultipartFile& file, double timeout_s) {
  ASSIGN_OR_RETURN(const Curl* curl, load_curl());
  std::unique_ptr<CURL, void (*)(CURL*)> handle(curl->easy_init(), curl->easy_cleanup);
  if (!handle) return Error("libcurl could not make a request");
  std::unique_ptr<curl_mime, void (*)(curl_mime*)> form(curl->mime_init(handle.get()), curl->mime_free);
  curl_mimepart* part = curl->mime_addpart(form.get());
  curl->mime_name(part, file.field.c_str());
  curl->mime_filename(part, file.filename.c_str());
  curl->mime_data(part, file.data.data(), file.data.size());
  HttpReply reply;
  char error[CURL_ERROR_SIZE] = {};
  CURL* h = handle.get();
  curl->easy_setopt(h, CURLOPT_URL, url.c_str());
  curl->easy_setopt(h, CURLOPT_MIMEPOST, form.get());
  curl->easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in gpuprof, which reads its signals itself
  curl->easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl->easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_reply);
  curl->easy_setopt(h, CURLOPT_WRITEDATA, &reply.body);
  curl->easy_setopt(h, CURLOPT_USERAGENT, "gpuprof");
  if (CURLcode done = curl->easy_perform(h); done != CURLE_OK)
    return Error(url + ": " + (error[0] ? std::string(error) : std::string(curl->easy_strerror(done))));
  curl->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

}  // namespace gpuprof
