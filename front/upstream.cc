#include "front/upstream.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace brake::front {

struct UpstreamClient::Transfer {
  UpstreamClient* owner = nullptr;
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  UpstreamCall call;
  int status = 0;
  Headers head;
  bool head_sent = false;
  bool paused = false;
  bool aborted = false;
  char error[CURL_ERROR_SIZE] = {0};
};

struct UpstreamClient::Socket {
  uv_poll_t poll;
  UpstreamClient* owner = nullptr;
  curl_socket_t fd = CURL_SOCKET_BAD;
};

namespace {

CURLM* Multi(void* m) { return static_cast<CURLM*>(m); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' ||
                        s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

size_t OnHeaderLine(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<UpstreamClient::Transfer*>(user);
  const size_t len = size * n;
  std::string_view line = Trim(std::string_view(data, len));
  if (line.starts_with("HTTP/")) {
    // A status line: a new answer (after a 1xx, or a redirect's).
    t->head.clear();
    size_t sp = line.find(' ');
    t->status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
    return len;
  }
  if (line.empty()) {
    if (t->status >= 200 && !t->head_sent && !t->aborted) {
      t->head_sent = true;
      if (t->call.on_head) t->call.on_head(t->status, t->head);
    }
    return len;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return len;
  std::string name(Trim(line.substr(0, colon)));
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  t->head.emplace_back(std::move(name), std::string(Trim(line.substr(colon + 1))));
  return len;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<UpstreamClient::Transfer*>(user);
  const size_t len = size * n;
  if (t->aborted) return 0;  // ends the transfer (CURLE_WRITE_ERROR)
  if (t->paused) return CURL_WRITEFUNC_PAUSE;  // curl keeps it for later
  if (!t->head_sent) {
    t->head_sent = true;
    if (t->call.on_head) t->call.on_head(t->status, t->head);
    if (t->aborted) return 0;
  }
  if (t->call.on_data) t->call.on_data(std::string_view(data, len));
  return t->aborted ? 0 : len;
}

}  // namespace

UpstreamClient::UpstreamClient(uv_loop_t* loop) : loop_(loop) {
  static const bool global = [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return true;
  }();
  (void)global;
  multi_ = curl_multi_init();
  curl_multi_setopt(Multi(multi_), CURLMOPT_SOCKETFUNCTION, &UpstreamClient::OnSocket);
  curl_multi_setopt(Multi(multi_), CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(Multi(multi_), CURLMOPT_TIMERFUNCTION, &UpstreamClient::OnTimer);
  curl_multi_setopt(Multi(multi_), CURLMOPT_TIMERDATA, this);
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
}

UpstreamClient::~UpstreamClient() {
  if (multi_ != nullptr) curl_multi_cleanup(Multi(multi_));
}

uint64_t UpstreamClient::Start(UpstreamCall call) {
  auto t = std::make_unique<Transfer>();
  t->owner = this;
  t->id = next_id_++;
  t->call = std::move(call);
  CURL* e = curl_easy_init();
  t->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, t->call.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeaderLine);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t->call.connect_timeout_ms));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(t->call.timeout_ms));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (t->call.method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->call.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(t->call.body.size()));
  } else if (t->call.method != "GET") {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->call.method.c_str());
  }
  for (const auto& [name, value] : t->call.headers) {
    std::string line = name + ": " + value;
    t->headers = curl_slist_append(t->headers, line.c_str());
  }
  t->headers = curl_slist_append(t->headers, "Expect:");  // no 100-continue wait
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  const uint64_t id = t->id;
  Transfer* raw = t.get();
  calls_.emplace(id, std::move(t));
  if (curl_multi_add_handle(Multi(multi_), e) != CURLM_OK) {
    Remove(raw);
    return 0;
  }
  return id;
}

void UpstreamClient::Pause(uint64_t id, bool paused) {
  auto it = calls_.find(id);
  if (it == calls_.end() || it->second->aborted) return;
  Transfer* t = it->second.get();
  if (t->paused == paused) return;
  t->paused = paused;
  if (!paused && in_callbacks_ == 0) {
    ++in_callbacks_;
    curl_easy_pause(t->easy, CURLPAUSE_CONT);  // may deliver what it kept
    --in_callbacks_;
    Finished();
  }
}

void UpstreamClient::Abort(uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  Transfer* t = it->second.get();
  t->aborted = true;
  if (in_callbacks_ > 0) return;  // Finished removes it
  Remove(t);
}

void UpstreamClient::Remove(Transfer* t) {
  curl_multi_remove_handle(Multi(multi_), t->easy);
  curl_easy_cleanup(t->easy);
  curl_slist_free_all(t->headers);
  calls_.erase(t->id);
}

void UpstreamClient::Drive(int fd, int events) {
  int running = 0;
  ++in_callbacks_;
  curl_multi_socket_action(Multi(multi_), fd, events, &running);
  --in_callbacks_;
  Finished();
}

void UpstreamClient::Finished() {
  if (in_callbacks_ > 0) return;
  CURLMsg* msg;
  int left = 0;
  std::vector<std::pair<UpstreamCall, std::pair<std::string, bool>>> done;
  while ((msg = curl_multi_info_read(Multi(multi_), &left)) != nullptr) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    const CURLcode result = msg->data.result;
    if (t == nullptr) continue;
    if (!t->aborted) {
      std::string error;
      if (result != CURLE_OK) {
        error = t->error[0] != '\0' ? t->error : curl_easy_strerror(result);
      } else if (!t->head_sent) {
        // An answer without a body: its head still goes out.
        t->head_sent = true;
        if (t->call.on_head) t->call.on_head(t->status, t->head);
      }
      done.emplace_back(std::move(t->call),
                        std::make_pair(std::move(error),
                                       result == CURLE_OPERATION_TIMEDOUT));
    }
    Remove(t);
  }
  // Calls aborted inside curl's callbacks that curl did not end itself.
  std::vector<Transfer*> aborted;
  for (auto& [id, t] : calls_)
    if (t->aborted) aborted.push_back(t.get());
  for (Transfer* t : aborted) Remove(t);
  for (auto& [call, result] : done) {
    if (call.on_done) call.on_done(result.first, result.second);
  }
}

int UpstreamClient::OnSocket(void*, int fd, int what, void* self_ptr,
                             void* socketp) {
  auto* self = static_cast<UpstreamClient*>(self_ptr);
  auto* s = static_cast<Socket*>(socketp);
  if (what == CURL_POLL_REMOVE) {
    if (s != nullptr) {
      uv_poll_stop(&s->poll);
      uv_close(reinterpret_cast<uv_handle_t*>(&s->poll), [](uv_handle_t* h) {
        auto* sock = static_cast<Socket*>(h->data);
        UpstreamClient* owner = sock->owner;
        delete sock;
        if (--owner->open_handles_ == 0 && owner->on_closed_) {
          auto cb = std::move(owner->on_closed_);
          owner->on_closed_ = nullptr;
          cb();
        }
      });
      if (!self->closing_) curl_multi_assign(Multi(self->multi_), fd, nullptr);
    }
    return 0;
  }
  if (s == nullptr) {
    s = new Socket();
    s->owner = self;
    s->fd = fd;
    uv_poll_init_socket(self->loop_, &s->poll, fd);
    s->poll.data = s;
    ++self->open_handles_;
    curl_multi_assign(Multi(self->multi_), fd, s);
  }
  int events = 0;
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  uv_poll_start(&s->poll, events, [](uv_poll_t* h, int status, int ev) {
    auto* sock = static_cast<Socket*>(h->data);
    int flags = 0;
    if (status < 0) flags = CURL_CSELECT_ERR;
    if (ev & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (ev & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    sock->owner->Drive(static_cast<int>(sock->fd), flags);
  });
  return 0;
}

int UpstreamClient::OnTimer(void*, long timeout_ms, void* self_ptr) {
  auto* self = static_cast<UpstreamClient*>(self_ptr);
  if (timeout_ms < 0) {
    uv_timer_stop(&self->timer_);
  } else {
    // Fired on the loop, never from inside this callback (curl forbids it).
    uv_timer_start(&self->timer_, [](uv_timer_t* t) {
      static_cast<UpstreamClient*>(t->data)->Drive(CURL_SOCKET_TIMEOUT, 0);
    }, static_cast<uint64_t>(timeout_ms), 0);
  }
  return 0;
}

void UpstreamClient::Close(std::function<void()> on_closed) {
  closing_ = true;
  on_closed_ = std::move(on_closed);
  std::vector<Transfer*> all;
  for (auto& [id, t] : calls_) all.push_back(t.get());
  for (Transfer* t : all) Remove(t);
  curl_multi_cleanup(Multi(multi_));  // closes cached connections
  multi_ = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), [](uv_handle_t* h) {
    auto* self = static_cast<UpstreamClient*>(h->data);
    if (--self->open_handles_ == 0 && self->on_closed_) {
      auto cb = std::move(self->on_closed_);
      self->on_closed_ = nullptr;
      cb();
    }
  });
}

}  // namespace brake::front
