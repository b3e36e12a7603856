/*
** transport.c: HTTP over libcurl for jsoncontract.core.
**
**   core.http_request(req)        -> res | nil, err     (one easy handle)
**   core.http_many(reqs [, opts]) -> results            (one multi handle)
**
** and the few process-level calls the batch runs need: signals, process
** ids, and fsync of an export file and its folder.
**
** Policy is fixed here, not optional: TLS verified, redirects never
** followed, HTTP/HTTPS only, compressed bodies decoded by curl, response
** body capped. Statuses 4xx/5xx are responses, not errors; classifying them
** is the provider layer's job (Lua).
**
** Memory: every curl handle, header list and buffer belongs to one userdata
** box ('jsoncontract.HttpRequest' for one request, 'jsoncontract.HttpMany'
** for many) created before anything is acquired, so a Lua error anywhere
** (out of memory while building the result) frees everything through __gc.
** libcurl callbacks never touch the Lua API: they append to C buffers,
** allocated with the state's allocator (captured at box creation), and
** return abort values; no longjmp ever crosses libcurl.
*/
#include "jc.h"
#include "opts.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>

/* ---------------------------------------------------------------------- */
/* Limits and defaults                                                     */
/* ---------------------------------------------------------------------- */

#ifndef JC_HTTP_CONNECT_TIMEOUT_MS
#define JC_HTTP_CONNECT_TIMEOUT_MS 10000
#endif
#ifndef JC_HTTP_TIMEOUT_MS
#define JC_HTTP_TIMEOUT_MS 90000
#endif
#ifndef JC_HTTP_MAX_RESPONSE_BYTES
#define JC_HTTP_MAX_RESPONSE_BYTES (8 * 1024 * 1024)
#endif
/* Upper bound accepted for 'max_response_bytes' (1 GiB). */
#ifndef JC_HTTP_MAX_RESPONSE_LIMIT
#define JC_HTTP_MAX_RESPONSE_LIMIT (1024.0 * 1024.0 * 1024.0)
#endif
/* Response header bytes kept (one response block); over it: too_large. */
#ifndef JC_HTTP_MAX_HEADER_BYTES
#define JC_HTTP_MAX_HEADER_BYTES (256 * 1024)
#endif
/* Largest timeout accepted, ms (about 24.8 days; fits a 32-bit long). */
#define JC_HTTP_MAX_MS 2147483647.0
#ifndef JC_HTTP_MAX_PARALLEL
#define JC_HTTP_MAX_PARALLEL 16
#endif
#define JC_HTTP_MAX_PARALLEL_LIMIT 1024
/* Longest method token accepted. */
#define JC_HTTP_MAX_METHOD 32

#define JC_HTTP_REQUEST_MT "jsoncontract.HttpRequest"
#define JC_HTTP_MANY_MT "jsoncontract.HttpMany"

/* ---------------------------------------------------------------------- */
/* Types                                                                   */
/* ---------------------------------------------------------------------- */

/* A growable byte buffer from the Lua allocator; 'cap' is the block size. */
typedef struct jc_http_buf {
  char *data;
  size_t len, cap;
} jc_http_buf;

/* Why a callback aborted the transfer (checked after curl returns). */
enum { JC_ABORT_NONE = 0, JC_ABORT_TOO_LARGE, JC_ABORT_READ_TIMEOUT,
       JC_ABORT_NOMEM };

/* One transfer. Lives inside a box; never moves once a curl handle points
** at it (callbacks get its address). */
typedef struct jc_http_xfer {
  CURL *easy;
  CURLU *url;
  struct curl_slist *headers;
  lua_Alloc allocf;
  void *allocud;
  jc_http_buf body;          /* response body (decoded) */
  jc_http_buf head;          /* raw header lines of the last response block */
  size_t max_body;           /* bytes */
  double read_timeout_ms;    /* 0 = none */
  double last_io_ms;         /* monotonic time of the last byte moved */
  curl_off_t last_io_bytes;  /* dlnow + ulnow at that time */
  double start_ms, end_ms;   /* monotonic, wall time of the transfer */
  int abort_reason;          /* JC_ABORT_* */
  int added;                 /* inside the multi handle */
  int done;
  CURLcode result;
  char hostport[300];        /* "host:port", for messages */
  char errbuf[CURL_ERROR_SIZE];
} jc_http_xfer;

/* Box of core.http_many: a multi handle and 'n' transfers. */
typedef struct jc_http_batch {
  CURLM *multi;
  jc_http_xfer *xfers;       /* 'n' items from the Lua allocator */
  size_t n;
  lua_Alloc allocf;
  void *allocud;
} jc_http_batch;

static int jc_http_curl_ready = 0;   /* curl_global_init done (process) */

/* ---------------------------------------------------------------------- */
/* Small helpers (no Lua API: callable from libcurl callbacks)             */
/* ---------------------------------------------------------------------- */

static double jc_http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* Append 'n' bytes to 'b', growing by doubling but never past 'limit'
** bytes. Returns 0 on success, 1 when 'limit' would be exceeded, 2 when
** the allocator failed. */
static int jc_http_buf_append(jc_http_xfer *x, jc_http_buf *b,
                              const char *p, size_t n, size_t limit) {
  if (n > limit || b->len > limit - n) return 1;
  if (b->len + n > b->cap) {
    size_t ncap = b->cap ? b->cap : 4096;
    void *nd;
    while (ncap < b->len + n)
      ncap = (ncap > limit / 2) ? limit : ncap * 2;
    if (ncap > limit) ncap = limit;
    nd = x->allocf(x->allocud, b->data, b->cap, ncap);
    if (nd == NULL) return 2;
    b->data = (char *)nd;
    b->cap = ncap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

static void jc_http_buf_free(jc_http_xfer *x, jc_http_buf *b) {
  if (b->data != NULL) x->allocf(x->allocud, b->data, b->cap, 0);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* Free everything a transfer holds; idempotent. 'multi' is the multi
** handle it may have been added to (NULL for the easy path). */
static void jc_http_xfer_cleanup(jc_http_xfer *x, CURLM *multi) {
  if (x->easy != NULL) {
    if (x->added && multi != NULL) curl_multi_remove_handle(multi, x->easy);
    x->added = 0;
    curl_easy_cleanup(x->easy);
    x->easy = NULL;
  }
  if (x->headers != NULL) {
    curl_slist_free_all(x->headers);
    x->headers = NULL;
  }
  if (x->url != NULL) {
    curl_url_cleanup(x->url);
    x->url = NULL;
  }
  if (x->allocf != NULL) {
    jc_http_buf_free(x, &x->body);
    jc_http_buf_free(x, &x->head);
  }
}

/* ---------------------------------------------------------------------- */
/* libcurl callbacks: C buffers only, never the Lua API                    */
/* ---------------------------------------------------------------------- */

/* CURLOPT_WRITEFUNCTION: append the (decoded) body; abort with a short
** count once 'max_body' would be exceeded. */
static size_t jc_http_on_body(char *p, size_t size, size_t nmemb, void *ud) {
  jc_http_xfer *x = (jc_http_xfer *)ud;
  size_t n = size * nmemb;
  int rc = jc_http_buf_append(x, &x->body, p, n, x->max_body);
  if (rc != 0) {
    x->abort_reason = rc == 1 ? JC_ABORT_TOO_LARGE : JC_ABORT_NOMEM;
    return 0;
  }
  return n;
}

/* CURLOPT_HEADERFUNCTION: keep the header lines of the last response block
** (a status line starts a new block: 100 Continue, proxy CONNECT). */
static size_t jc_http_on_header(char *p, size_t size, size_t nmemb,
                                void *ud) {
  jc_http_xfer *x = (jc_http_xfer *)ud;
  size_t n = size * nmemb;
  int rc;
  if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) x->head.len = 0;
  rc = jc_http_buf_append(x, &x->head, p, n, JC_HTTP_MAX_HEADER_BYTES);
  if (rc != 0) {
    x->abort_reason = rc == 1 ? JC_ABORT_TOO_LARGE : JC_ABORT_NOMEM;
    return 0;
  }
  return n;
}

/* CURLOPT_XFERINFOFUNCTION: the read timeout. Any byte moved either way
** restarts the clock; 'read_timeout_ms' without one aborts. */
static int jc_http_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                               curl_off_t ultotal, curl_off_t ulnow) {
  jc_http_xfer *x = (jc_http_xfer *)ud;
  double now = jc_http_now_ms();
  (void)dltotal; (void)ultotal;
  if (dlnow + ulnow != x->last_io_bytes) {
    x->last_io_bytes = dlnow + ulnow;
    x->last_io_ms = now;
  } else if (now - x->last_io_ms >= x->read_timeout_ms) {
    x->abort_reason = JC_ABORT_READ_TIMEOUT;
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Argument checks (before anything is allocated)                          */
/* ---------------------------------------------------------------------- */

static const char *const jc_http_fields[] = {
  "url", "method", "headers", "body", "connect_timeout_ms", "timeout_ms",
  "read_timeout_ms", "max_response_bytes", "ca_file", NULL
};

/* RFC 9110 §5.6.2 token character. */
static int jc_http_istchar(unsigned char c) {
  if (c >= '0' && c <= '9') return 1;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return 1;
  return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int jc_http_istoken(const char *s, size_t len) {
  size_t i;
  if (len == 0) return 0;
  for (i = 0; i < len; i++)
    if (!jc_http_istchar((unsigned char)s[i])) return 0;
  return 1;
}

/* Raise "<where>: <msg>". 'where' is "http_request" or
** "http_many: request #i". Never returns. */
static int jc_http_misuse(lua_State *L, const char *where, const char *fmt,
                          const char *a) {
  lua_pushfstring(L, "%s: ", where);
  lua_pushfstring(L, fmt, a);
  lua_concat(L, 2);
  return lua_error(L);
}

/* Check the optional number field 'name' of the table at 'idx': absent, or
** an integer in [min, max]. [-0, +0, v] */
static void jc_http_check_ms(lua_State *L, int idx, const char *where,
                             const char *name, double min, double max) {
  lua_Number v;
  lua_getfield(L, idx, name);
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      jc_http_misuse(L, where, "'%s' must be an integer", name);
    v = lua_tonumber(L, -1);
    if (!(v >= min && v <= max) || floor(v) != v) {
      lua_pushfstring(L, "%s: '%s' must be an integer in [%d, %d]", where,
                      name, (int)min, (int)max);
      lua_error(L);
    }
  }
  lua_pop(L, 1);
}

/* Check that the optional field 'name' is a string without NUL; 'need'
** makes it required. [-0, +0, v] */
static void jc_http_check_str(lua_State *L, int idx, const char *where,
                              const char *name, int need) {
  size_t len;
  const char *s;
  lua_getfield(L, idx, name);
  if (lua_isnil(L, -1)) {
    if (need) jc_http_misuse(L, where, "'%s' is required", name);
  } else {
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_http_misuse(L, where, "'%s' must be a string", name);
    s = lua_tolstring(L, -1, &len);
    if (strlen(s) != len && strcmp(name, "body") != 0)
      jc_http_misuse(L, where, "'%s' contains a NUL byte", name);
  }
  lua_pop(L, 1);
}

/* Check a whole request table at 'idx'. Raises on misuse; allocates
** nothing but error messages. [-0, +0, v] */
static void jc_http_check_req(lua_State *L, int idx, const char *where) {
  size_t len, i;
  const char *s;
  idx = jc_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE)
    jc_http_misuse(L, where, "request must be a table%s", "");
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    int known = 0;
    if (lua_type(L, -2) != LUA_TSTRING)
      jc_http_misuse(L, where, "request has a non-string key%s", "");
    s = lua_tostring(L, -2);
    for (i = 0; jc_http_fields[i] != NULL; i++)
      if (strcmp(s, jc_http_fields[i]) == 0) known = 1;
    if (!known) jc_http_misuse(L, where, "unknown field '%s'", s);
    lua_pop(L, 1);
  }
  jc_http_check_str(L, idx, where, "url", 1);
  lua_getfield(L, idx, "url");
  s = lua_tolstring(L, -1, &len);
  if (!((len > 7 && curl_strnequal(s, "http://", 7)) ||
        (len > 8 && curl_strnequal(s, "https://", 8))))
    jc_http_misuse(L, where, "'url' must start with http:// or https://%s",
                   "");
  lua_pop(L, 1);
  jc_http_check_str(L, idx, where, "method", 0);
  lua_getfield(L, idx, "method");
  if (!lua_isnil(L, -1)) {
    s = lua_tolstring(L, -1, &len);
    if (len > JC_HTTP_MAX_METHOD || !jc_http_istoken(s, len))
      jc_http_misuse(L, where, "'method' is not an HTTP method token%s", "");
  }
  lua_pop(L, 1);
  jc_http_check_str(L, idx, where, "body", 0);
  jc_http_check_str(L, idx, where, "ca_file", 0);
  jc_http_check_ms(L, idx, where, "connect_timeout_ms", 1, JC_HTTP_MAX_MS);
  jc_http_check_ms(L, idx, where, "timeout_ms", 0, JC_HTTP_MAX_MS);
  jc_http_check_ms(L, idx, where, "read_timeout_ms", 1, JC_HTTP_MAX_MS);
  jc_http_check_ms(L, idx, where, "max_response_bytes", 1,
                   JC_HTTP_MAX_RESPONSE_LIMIT);
  lua_getfield(L, idx, "headers");
  if (!lua_isnil(L, -1)) {
    int h = lua_gettop(L);
    if (lua_type(L, h) != LUA_TTABLE)
      jc_http_misuse(L, where, "'headers' must be a table%s", "");
    lua_pushnil(L);
    while (lua_next(L, h) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        jc_http_misuse(L, where, "'headers' must map strings to strings%s",
                       "");
      s = lua_tolstring(L, -2, &len);
      if (!jc_http_istoken(s, len))
        jc_http_misuse(L, where, "header name '%s' is not a token", s);
      s = lua_tolstring(L, -1, &len);
      for (i = 0; i < len; i++)   /* no CR, LF or NUL: no header injection */
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
          jc_http_misuse(L, where, "header '%s' has a control character"
                         " in its value", lua_tostring(L, -2));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* ---------------------------------------------------------------------- */
/* Setting up one transfer                                                 */
/* ---------------------------------------------------------------------- */

static void jc_http_nomem(lua_State *L) {
  lua_pushliteral(L, "not enough memory");
  lua_error(L);
}

/* Read the number field 'name' of the (checked) table at 'idx', or 'def'. */
static double jc_http_getnum(lua_State *L, int idx, const char *name,
                             double def) {
  double v = def;
  lua_getfield(L, idx, name);
  if (!lua_isnil(L, -1)) v = (double)lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Append "name: value" to the header list of 'x' ("name;" for an empty
** value, which curl would otherwise read as "remove this header"). */
static void jc_http_add_header(lua_State *L, jc_http_xfer *x,
                               const char *name, const char *value) {
  struct curl_slist *nl;
  if (value == NULL) lua_pushfstring(L, "%s:", name);        /* suppress */
  else if (*value == '\0') lua_pushfstring(L, "%s;", name);
  else lua_pushfstring(L, "%s: %s", name, value);
  nl = curl_slist_append(x->headers, lua_tostring(L, -1));
  lua_pop(L, 1);
  if (nl == NULL) jc_http_nomem(L);
  x->headers = nl;
}

/* Set up 'x' (zeroed, inside its box) from the checked request table at
** 'idx'. With 'copy_body' 0 the request 'body' string is not copied: it
** stays anchored by the request table, an argument of the running call, for
** the whole transfer; the event loop copies it (its transfers outlive the
** call that starts them).
** Raises on out of memory or a URL curl cannot parse. [-0, +0, e] */
static void jc_http_xfer_setup(lua_State *L, jc_http_xfer *x, int idx,
                               const char *where, int copy_body) {
  CURL *e;
  CURLUcode uc;
  const char *method = NULL, *body = NULL;
  size_t body_len = 0;
  int has_ctype = 0, has_expect = 0;
  char *host = NULL, *port = NULL;
  idx = jc_absindex(L, idx);
  x->allocf = lua_getallocf(L, &x->allocud);
  x->max_body = (size_t)jc_http_getnum(L, idx, "max_response_bytes",
                                       JC_HTTP_MAX_RESPONSE_BYTES);
  x->read_timeout_ms = jc_http_getnum(L, idx, "read_timeout_ms", 0);

  /* The URL, parsed by curl's own parser, which the handle then uses. */
  x->url = curl_url();
  if (x->url == NULL) jc_http_nomem(L);
  lua_getfield(L, idx, "url");
  uc = curl_url_set(x->url, CURLUPART_URL, lua_tostring(L, -1), 0);
  lua_pop(L, 1);
  if (uc == CURLUE_OUT_OF_MEMORY) jc_http_nomem(L);
  if (uc != CURLUE_OK)
    jc_http_misuse(L, where, "'url' is not a valid URL (%s)",
                   curl_url_strerror(uc));
  if (curl_url_get(x->url, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(x->url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)
        == CURLUE_OK)
    snprintf(x->hostport, sizeof x->hostport, "%s:%s", host, port);
  else
    snprintf(x->hostport, sizeof x->hostport, "%s", "?");
  curl_free(host);
  curl_free(port);

  x->easy = e = curl_easy_init();
  if (e == NULL) jc_http_nomem(L);

  /* Headers: the caller's, then curl's defaults we do not want. */
  lua_getfield(L, idx, "headers");
  if (!lua_isnil(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      const char *name = lua_tostring(L, -2);
      if (curl_strequal(name, "content-type")) has_ctype = 1;
      if (curl_strequal(name, "expect")) has_expect = 1;
      jc_http_add_header(L, x, name, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, idx, "body");
  if (!lua_isnil(L, -1)) body = lua_tolstring(L, -1, &body_len);
  lua_pop(L, 1);   /* still anchored by the request table */
  lua_getfield(L, idx, "method");
  method = lua_tostring(L, -1);   /* anchored likewise; NULL if absent */
  lua_pop(L, 1);
  if (body == NULL && method != NULL && strcmp(method, "POST") == 0)
    body = "";   /* a POST without a body sends Content-Length: 0 */
  if (body != NULL) {
    /* curl would add "Content-Type: application/x-www-form-urlencoded"
    ** and "Expect: 100-continue"; send neither unless asked. */
    if (!has_ctype) jc_http_add_header(L, x, "Content-Type", NULL);
    if (!has_expect) jc_http_add_header(L, x, "Expect", NULL);
  }

  if (curl_easy_setopt(e, CURLOPT_CURLU, x->url) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)x) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
#if LIBCURL_VERSION_NUM >= 0x075500
      curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        != CURLE_OK ||
#else
      curl_easy_setopt(e, CURLOPT_PROTOCOLS,
                       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS,
                       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) != CURLE_OK ||
#endif
      curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                       (long)jc_http_getnum(L, idx, "connect_timeout_ms",
                                            JC_HTTP_CONNECT_TIMEOUT_MS))
        != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                       (long)jc_http_getnum(L, idx, "timeout_ms",
                                            JC_HTTP_TIMEOUT_MS))
        != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
                       (curl_off_t)x->max_body) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, jc_http_on_body)
        != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)x) != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, jc_http_on_header)
        != CURLE_OK ||
      curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)x) != CURLE_OK ||
      (x->headers != NULL &&
       curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers) != CURLE_OK))
    jc_http_misuse(L, where, "libcurl rejected an option%s", "");

  if (x->read_timeout_ms > 0 &&
      (curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, jc_http_on_progress)
         != CURLE_OK ||
       curl_easy_setopt(e, CURLOPT_XFERINFODATA, (void *)x) != CURLE_OK ||
       curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L) != CURLE_OK))
    jc_http_misuse(L, where, "libcurl rejected an option%s", "");

  lua_getfield(L, idx, "ca_file");
  if (!lua_isnil(L, -1) &&
      curl_easy_setopt(e, CURLOPT_CAINFO, lua_tostring(L, -1)) != CURLE_OK)
    jc_http_misuse(L, where, "libcurl rejected 'ca_file'%s", "");
  lua_pop(L, 1);

  /* Method and body. */
  if (body != NULL) {
    if (curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)body_len) != CURLE_OK ||
        curl_easy_setopt(e, copy_body ? CURLOPT_COPYPOSTFIELDS
                                      : CURLOPT_POSTFIELDS, body) != CURLE_OK)
      jc_http_nomem(L);
    if (method != NULL && strcmp(method, "POST") != 0 &&
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK)
      jc_http_nomem(L);
  } else if (method == NULL || strcmp(method, "GET") == 0) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK) {
    jc_http_nomem(L);
  }
}

/* Mark the start of the transfer (wall clock and read-timeout clock). */
static void jc_http_xfer_start(jc_http_xfer *x) {
  x->start_ms = x->last_io_ms = jc_http_now_ms();
  x->last_io_bytes = 0;
}

/* ---------------------------------------------------------------------- */
/* Results                                                                 */
/* ---------------------------------------------------------------------- */

/* Name of a CURLcode, for err.curl_code. */
static const char *jc_http_code_name(CURLcode c) {
  switch (c) {
#define JC_CC(n) case n: return #n;
    JC_CC(CURLE_OK) JC_CC(CURLE_UNSUPPORTED_PROTOCOL)
    JC_CC(CURLE_URL_MALFORMAT) JC_CC(CURLE_COULDNT_RESOLVE_PROXY)
    JC_CC(CURLE_COULDNT_RESOLVE_HOST) JC_CC(CURLE_COULDNT_CONNECT)
    JC_CC(CURLE_WEIRD_SERVER_REPLY) JC_CC(CURLE_HTTP2)
    JC_CC(CURLE_PARTIAL_FILE) JC_CC(CURLE_WRITE_ERROR)
    JC_CC(CURLE_READ_ERROR) JC_CC(CURLE_OUT_OF_MEMORY)
    JC_CC(CURLE_OPERATION_TIMEDOUT) JC_CC(CURLE_RANGE_ERROR)
    JC_CC(CURLE_SSL_CONNECT_ERROR) JC_CC(CURLE_ABORTED_BY_CALLBACK)
    JC_CC(CURLE_BAD_FUNCTION_ARGUMENT) JC_CC(CURLE_INTERFACE_FAILED)
    JC_CC(CURLE_TOO_MANY_REDIRECTS) JC_CC(CURLE_GOT_NOTHING)
    JC_CC(CURLE_SSL_ENGINE_NOTFOUND) JC_CC(CURLE_SSL_ENGINE_SETFAILED)
    JC_CC(CURLE_SEND_ERROR) JC_CC(CURLE_RECV_ERROR)
    JC_CC(CURLE_SSL_CERTPROBLEM) JC_CC(CURLE_SSL_CIPHER)
    JC_CC(CURLE_PEER_FAILED_VERIFICATION) JC_CC(CURLE_BAD_CONTENT_ENCODING)
    JC_CC(CURLE_FILESIZE_EXCEEDED) JC_CC(CURLE_SEND_FAIL_REWIND)
    JC_CC(CURLE_SSL_ENGINE_INITFAILED) JC_CC(CURLE_SSL_CACERT_BADFILE)
    JC_CC(CURLE_SSL_SHUTDOWN_FAILED) JC_CC(CURLE_AGAIN)
    JC_CC(CURLE_SSL_CRL_BADFILE) JC_CC(CURLE_SSL_ISSUER_ERROR)
    JC_CC(CURLE_SSL_PINNEDPUBKEYNOTMATCH) JC_CC(CURLE_SSL_INVALIDCERTSTATUS)
    JC_CC(CURLE_HTTP2_STREAM) JC_CC(CURLE_RECURSIVE_API_CALL)
    JC_CC(CURLE_HTTP3) JC_CC(CURLE_QUIC_CONNECT_ERROR)
    JC_CC(CURLE_SSL_CLIENTCERT) JC_CC(CURLE_UNRECOVERABLE_POLL)
    JC_CC(CURLE_USE_SSL_FAILED) JC_CC(CURLE_FAILED_INIT)
#undef JC_CC
    default: return "CURLE_UNKNOWN";
  }
}

/* Map a finished transfer to an error kind, or NULL if it is a response. */
static const char *jc_http_kind(const jc_http_xfer *x) {
  switch (x->result) {
    case CURLE_OK: return NULL;
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: case CURLE_INTERFACE_FAILED:
      return "connect";
    case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM: case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR: case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED: case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CLIENTCERT: case CURLE_USE_SSL_FAILED:
      return "tls";
    case CURLE_FILESIZE_EXCEEDED: return "too_large";
    case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR: case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return "reset";
    case CURLE_WRITE_ERROR: case CURLE_ABORTED_BY_CALLBACK:
      if (x->abort_reason == JC_ABORT_TOO_LARGE) return "too_large";
      if (x->abort_reason == JC_ABORT_READ_TIMEOUT) return "timeout";
      return "protocol";
    default: return "protocol";
  }
}

/* Push the header table of 'x': lower-cased names, last value wins,
** obsolete line folding joined with one space. [-0, +1, m] */
static void jc_http_push_headers(lua_State *L, const jc_http_xfer *x) {
  const char *p = x->head.data, *end = p + x->head.len;
  int t, have_last = 0;
  luaL_Buffer b;
  lua_newtable(L);
  t = lua_gettop(L);
  if (p == NULL) return;
  while (p < end) {
    const char *eol = (const char *)memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end, *colon, *v, *ve;
    const char *next = eol ? eol + 1 : end;
    size_t i;
    if (le > p && le[-1] == '\r') le--;
    if (le == p || (le - p >= 5 && memcmp(p, "HTTP/", 5) == 0)) {
      if (have_last) lua_pop(L, 1);
      have_last = 0;
    } else if (*p == ' ' || *p == '\t') {   /* obs-fold continuation */
      if (have_last) {
        v = p;
        while (v < le && (*v == ' ' || *v == '\t')) v++;
        lua_pushvalue(L, -1);              /* last name */
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
        lua_pushliteral(L, " ");
        lua_pushlstring(L, v, (size_t)(le - v));
        lua_concat(L, 3);
        lua_rawset(L, t);
      }
    } else if ((colon = (const char *)memchr(p, ':', (size_t)(le - p)))
               != NULL && colon > p) {
      if (have_last) lua_pop(L, 1);
      luaL_buffinit(L, &b);
      for (i = 0; i < (size_t)(colon - p); i++) {
        char c = p[i];
        luaL_addchar(&b, (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c);
      }
      luaL_pushresult(&b);                 /* name stays as "last name" */
      v = colon + 1;
      ve = le;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      lua_pushvalue(L, -1);
      lua_pushlstring(L, v, (size_t)(ve - v));
      lua_rawset(L, t);
      have_last = 1;
    }
    p = next;
  }
  if (have_last) lua_pop(L, 1);
}

/* Push the outcome of a finished transfer: the res table, or an err table
** (category "transport"). Returns 1 for res, 0 for err. Raises on out of
** memory in a callback. [-0, +1, m] */
static int jc_http_push_result(lua_State *L, jc_http_xfer *x) {
  const char *kind;
  double elapsed = x->end_ms - x->start_ms;
  long status = 0;
  if (x->abort_reason == JC_ABORT_NOMEM)
    jc_http_nomem(L);
  /* libcurl 7.88 also reports a response header line over its 100 KB limit
  ** as CURLE_OUT_OF_MEMORY: that is the peer's data, not our memory, so it
  ** is this item's error, never a raise that would stop a whole batch. */
  if (x->result == CURLE_OUT_OF_MEMORY) {
    jc_error_begin(L, "transport", "too_large", "a response header from %s "
                   "is too large (or libcurl ran out of memory)", x->hostport);
    lua_pushstring(L, jc_http_code_name(x->result));
    lua_setfield(L, -2, "curl_code");
    lua_pushnumber(L, (lua_Number)elapsed);
    lua_setfield(L, -2, "elapsed_ms");
    jc_error_end(L);
    return 0;
  }
  kind = jc_http_kind(x);
  if (kind == NULL) {
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)status);
    lua_setfield(L, -2, "status");
    jc_http_push_headers(L, x);
    lua_setfield(L, -2, "headers");
    lua_pushlstring(L, x->body.data ? x->body.data : "", x->body.len);
    lua_setfield(L, -2, "body");
    lua_pushnumber(L, (lua_Number)elapsed);
    lua_setfield(L, -2, "elapsed_ms");
    return 1;
  }
  if (strcmp(kind, "timeout") == 0) {
    if (x->abort_reason == JC_ABORT_READ_TIMEOUT)
      jc_error_begin(L, "transport", kind,
                     "no data from %s for %d ms", x->hostport,
                     (int)x->read_timeout_ms);
    else
      jc_error_begin(L, "transport", kind, "timed out talking to %s after "
                     "%d ms", x->hostport, (int)elapsed);
  } else if (strcmp(kind, "connect") == 0) {
    jc_error_begin(L, "transport", kind, "cannot connect to %s (%s)",
                   x->hostport, curl_easy_strerror(x->result));
  } else if (strcmp(kind, "tls") == 0) {
    jc_error_begin(L, "transport", kind, "TLS failure with %s (%s)",
                   x->hostport, curl_easy_strerror(x->result));
  } else if (strcmp(kind, "too_large") == 0) {
    jc_error_begin(L, "transport", kind, "response from %s is over %d bytes",
                   x->hostport, (int)x->max_body);
  } else if (strcmp(kind, "reset") == 0) {
    jc_error_begin(L, "transport", kind, "connection to %s closed early (%s)",
                   x->hostport, curl_easy_strerror(x->result));
  } else {
    jc_error_begin(L, "transport", kind, "HTTP exchange with %s failed (%s)",
                   x->hostport, curl_easy_strerror(x->result));
  }
  lua_pushstring(L, jc_http_code_name(x->result));
  lua_setfield(L, -2, "curl_code");
  if (x->errbuf[0] != '\0' && x->abort_reason == JC_ABORT_NONE) {
    x->errbuf[sizeof x->errbuf - 1] = '\0';
    lua_pushstring(L, x->errbuf);   /* curl's own words; no header values */
    lua_setfield(L, -2, "detail");
  }
  lua_pushnumber(L, (lua_Number)elapsed);
  lua_setfield(L, -2, "elapsed_ms");
  jc_error_end(L);
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Boxes                                                                   */
/* ---------------------------------------------------------------------- */

/* __gc / close of 'jsoncontract.HttpRequest'; idempotent. */
static int jc_http_request_gc(lua_State *L) {
  jc_http_xfer *x = (jc_http_xfer *)luaL_checkudata(L, 1,
                                                    JC_HTTP_REQUEST_MT);
  jc_http_xfer_cleanup(x, NULL);
  return 0;
}

/* __gc / close of 'jsoncontract.HttpMany'; idempotent. Removes every
** easy handle from the multi handle before cleaning up either. */
static int jc_http_many_gc(lua_State *L) {
  jc_http_batch *m =
    (jc_http_batch *)luaL_checkudata(L, 1, JC_HTTP_MANY_MT);
  size_t i;
  if (m->xfers != NULL) {
    for (i = 0; i < m->n; i++) jc_http_xfer_cleanup(&m->xfers[i], m->multi);
    m->allocf(m->allocud, m->xfers, m->n * sizeof(jc_http_xfer), 0);
    m->xfers = NULL;
    m->n = 0;
  }
  if (m->multi != NULL) {
    curl_multi_cleanup(m->multi);
    m->multi = NULL;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Module functions                                                        */
/* ---------------------------------------------------------------------- */

/*
** core.http_request(req) -> res | nil, err
**
** One HTTP exchange on a libcurl easy handle; blocks until it ends.
** req (table; unknown fields raise):
**   url                 string, http:// or https:// (required)
**   method              string token; default "POST" with a body, else "GET"
**   headers             { [name] = value } strings; values never appear in
**                       messages; no Content-Type/Expect added unless given
**   body                string or nil; not copied
**   connect_timeout_ms  integer >= 1, default 10000
**   timeout_ms          integer >= 0, whole exchange, 0 = none, default 90000
**   read_timeout_ms     integer >= 1 or nil: abort when no byte moves for
**                       that long (checked about once a second by curl)
**   max_response_bytes  integer >= 1, decoded body cap, default 8 MiB
**   ca_file             string path of a CA bundle (PEM) or nil
** res: { status = integer, headers = { [lower-case name] = value },
**        body = string (decoded), elapsed_ms = number }
** err: category "transport", kind "timeout" | "connect" | "tls" |
**      "too_large" | "reset" | "protocol", message naming host:port,
**      curl_code (e.g. "CURLE_RECV_ERROR"), elapsed_ms.
** 4xx/5xx and 3xx are responses (redirects are never followed).
** Raises on misuse and out of memory. Stack: [-1, +1|2, e]
*/
static int jc_http_request(lua_State *L) {
  jc_http_xfer *x;
  luaL_checktype(L, 1, LUA_TTABLE);
  if (lua_gettop(L) > 1)
    return luaL_error(L, "http_request: takes one argument");
  jc_http_check_req(L, 1, "http_request");
  x = (jc_http_xfer *)jc_newuserdata(L, sizeof(jc_http_xfer));
  memset(x, 0, sizeof *x);
  luaL_setmetatable(L, JC_HTTP_REQUEST_MT);
  jc_http_xfer_setup(L, x, 1, "http_request", 0);
  jc_http_xfer_start(x);
  x->result = curl_easy_perform(x->easy);
  x->end_ms = jc_http_now_ms();
  if (jc_http_push_result(L, x)) {
    jc_http_xfer_cleanup(x, NULL);
    return 1;
  }
  jc_http_xfer_cleanup(x, NULL);
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

/*
** core.http_many(reqs [, opts]) -> results
**
** Runs the requests of the array 'reqs' (each as for http_request)
** concurrently on a libcurl multi handle, at most opts.max_parallel
** (integer 1..1024, default 16) at a time, and blocks until all end.
** results[i] is the res table or the err (core.error_fields finds it,
** category "transport") of reqs[i]. Every request is checked and set up
** before any transfer starts, so misuse raises with nothing sent.
** Stack: [-1|2, +1, e]
*/
static const jc_opt jc_http_many_opts[] = {
  { "max_parallel", JC_OPT_INT, 1, JC_HTTP_MAX_PARALLEL_LIMIT,
    "an integer from 1 to 1024", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

static int jc_http_many(lua_State *L) {
  jc_optval ov[1];
  jc_http_batch *m;
  size_t n, i, next = 0, active = 0;
  long max_parallel = JC_HTTP_MAX_PARALLEL;
  int running = 0;
  char where[48];
  luaL_checktype(L, 1, LUA_TTABLE);
  jc_opts_read(L, 2, jc_http_many_opts, ov);
  if (ov[0].set) max_parallel = (long)ov[0].n;
  if (lua_gettop(L) > 2)
    return luaL_error(L, "http_many: takes at most two arguments");
  lua_settop(L, 2);
  n = (size_t)jc_rawlen(L, 1);
  if (n > (size_t)1 << 20)
    return luaL_error(L, "http_many: too many requests");
  for (i = 0; i < n; i++) {
    snprintf(where, sizeof where, "http_many: request #%lu",
             (unsigned long)(i + 1));
    lua_rawgeti(L, 1, (int)(i + 1));
    jc_http_check_req(L, -1, where);
    lua_pop(L, 1);
  }

  m = (jc_http_batch *)jc_newuserdata(L, sizeof(jc_http_batch));
  memset(m, 0, sizeof *m);
  luaL_setmetatable(L, JC_HTTP_MANY_MT);        /* box at index 3 */
  m->allocf = lua_getallocf(L, &m->allocud);
  m->multi = curl_multi_init();
  if (m->multi == NULL) jc_http_nomem(L);
  if (n > 0) {
    m->xfers = (jc_http_xfer *)m->allocf(m->allocud, NULL, 0,
                                         n * sizeof(jc_http_xfer));
    if (m->xfers == NULL) jc_http_nomem(L);
    memset(m->xfers, 0, n * sizeof(jc_http_xfer));
    m->n = n;
  }
  for (i = 0; i < n; i++) {
    snprintf(where, sizeof where, "http_many: request #%lu",
             (unsigned long)(i + 1));
    lua_rawgeti(L, 1, (int)(i + 1));
    jc_http_xfer_setup(L, &m->xfers[i], -1, where, 0);
    lua_pop(L, 1);
  }

  for (;;) {
    CURLMsg *msg;
    CURLMcode mc;
    int queued;
    while (active < (size_t)max_parallel && next < n) {
      jc_http_xfer *x = &m->xfers[next++];
      mc = curl_multi_add_handle(m->multi, x->easy);
      if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
      if (mc != CURLM_OK) {   /* cannot start: report as protocol */
        x->result = CURLE_FAILED_INIT;
        x->start_ms = x->end_ms = jc_http_now_ms();
        x->done = 1;
        continue;
      }
      x->added = 1;
      jc_http_xfer_start(x);
      active++;
    }
    if (active == 0) break;
    mc = curl_multi_perform(m->multi, &running);
    if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
    if (mc != CURLM_OK)   /* a broken multi handle: never loop on it */
      return luaL_error(L, "http_many: curl_multi_perform failed (%s)",
                        curl_multi_strerror(mc));
    while ((msg = curl_multi_info_read(m->multi, &queued)) != NULL) {
      jc_http_xfer *x;
      char *priv = NULL;
      if (msg->msg != CURLMSG_DONE) continue;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      x = (jc_http_xfer *)(void *)priv;
      if (x == NULL || x->done) continue;
      x->result = msg->data.result;
      x->end_ms = jc_http_now_ms();
      x->done = 1;
      curl_multi_remove_handle(m->multi, x->easy);
      x->added = 0;
      active--;
    }
    if (active > 0 && (next >= n || active >= (size_t)max_parallel)) {
      mc = curl_multi_poll(m->multi, NULL, 0, 1000, NULL);
      if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
      if (mc != CURLM_OK)
        return luaL_error(L, "http_many: curl_multi_poll failed (%s)",
                          curl_multi_strerror(mc));
    }
  }

  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    jc_http_push_result(L, &m->xfers[i]);
    lua_rawseti(L, -2, (int)(i + 1));
    jc_http_xfer_cleanup(&m->xfers[i], m->multi);
  }
  lua_pushcfunction(L, jc_http_many_gc);
  lua_pushvalue(L, 3);
  lua_call(L, 1, 0);
  return 1;
}

/* ---------------------------------------------------------------------- */
/* The event loop: core.http_loop()                                        */
/* ---------------------------------------------------------------------- */

/*
** A batch job keeps C transfers in flight and resumes each item the moment
** its transfer ends: 'add' starts a transfer at once, 'wait' drives the
** multi handle until at least one transfer has finished (or the timeout,
** which the Lua scheduler sets to its next timer, passes, or a caught signal
** arrives) and returns only the finished ones. Nothing waits for the
** slowest transfer of a group: there are no groups.
**
** Transfers are allocated one by one (their addresses are handed to libcurl
** and must not move) and listed in 'slots'; a slot's index + 1 is the id
** Lua sees. Bodies are copied (CURLOPT_COPYPOSTFIELDS): a transfer outlives
** the call that started it.
*/

#define JC_HTTP_LOOP_MT "jsoncontract.HttpLoop"
/* Longest single poll, ms: signals and timers are looked at this often. */
#ifndef JC_HTTP_LOOP_POLL_MS
#define JC_HTTP_LOOP_POLL_MS 200
#endif
/* Most transfers in flight in one loop. */
#ifndef JC_HTTP_LOOP_MAX
#define JC_HTTP_LOOP_MAX 65536
#endif

typedef struct jc_http_loop {
  CURLM *multi;
  jc_http_xfer **slots;      /* 'cap' pointers, NULL = free */
  size_t cap, active;
  lua_Alloc allocf;
  void *allocud;
} jc_http_loop;

static volatile sig_atomic_t jc_sig_caught[3];   /* 0 unused, 1 INT, 2 TERM */

/* Free the transfer in slot 'i' (removing it from the multi handle). */
static void jc_http_loop_free(jc_http_loop *lp, size_t i) {
  jc_http_xfer *x = lp->slots[i];
  if (x == NULL) return;
  if (x->added) lp->active--;
  jc_http_xfer_cleanup(x, lp->multi);
  lp->allocf(lp->allocud, x, sizeof *x, 0);
  lp->slots[i] = NULL;
}

/* __gc / close of 'jsoncontract.HttpLoop'; idempotent. */
static int jc_http_loop_gc(lua_State *L) {
  jc_http_loop *lp = (jc_http_loop *)luaL_checkudata(L, 1, JC_HTTP_LOOP_MT);
  size_t i;
  if (lp->slots != NULL) {
    for (i = 0; i < lp->cap; i++) jc_http_loop_free(lp, i);
    lp->allocf(lp->allocud, lp->slots, lp->cap * sizeof(jc_http_xfer *), 0);
    lp->slots = NULL;
    lp->cap = 0;
  }
  if (lp->multi != NULL) {
    curl_multi_cleanup(lp->multi);
    lp->multi = NULL;
  }
  return 0;
}

static jc_http_loop *jc_http_loop_check(lua_State *L) {
  jc_http_loop *lp = (jc_http_loop *)luaL_checkudata(L, 1, JC_HTTP_LOOP_MT);
  if (lp->multi == NULL) luaL_error(L, "http_loop: the loop is closed");
  return lp;
}

/*
** core.http_loop() -> loop
**
** A new event loop (userdata 'jsoncontract.HttpLoop') with an empty libcurl
** multi handle. Methods: add, wait, cancel, count, close. Freed by close()
** or __gc (every transfer still in flight is dropped). Raises on out of
** memory. Stack: [-0, +1, m]
*/
static int jc_http_loop_new(lua_State *L) {
  jc_http_loop *lp;
  if (lua_gettop(L) > 0) return luaL_error(L, "http_loop: takes no argument");
  lp = (jc_http_loop *)jc_newuserdata(L, sizeof(jc_http_loop));
  memset(lp, 0, sizeof *lp);
  luaL_setmetatable(L, JC_HTTP_LOOP_MT);
  lp->allocf = lua_getallocf(L, &lp->allocud);
  lp->multi = curl_multi_init();
  if (lp->multi == NULL) jc_http_nomem(L);
  return 1;
}

/*
** loop:add(req) -> id
**
** Check 'req' (as for core.http_request; misuse raises with nothing sent)
** and start the transfer now. Returns its id, a positive integer that
** 'wait' hands back with the result; an id is reused only after its result
** was returned. Raises on misuse, out of memory, or more than
** JC_HTTP_LOOP_MAX transfers in flight. Stack: [-0, +1, e]
*/
static int jc_http_loop_add(lua_State *L) {
  jc_http_loop *lp = jc_http_loop_check(L);
  jc_http_xfer *x;
  size_t i;
  CURLMcode mc;
  luaL_checktype(L, 2, LUA_TTABLE);
  if (lua_gettop(L) > 2) return luaL_error(L, "http_loop:add: takes one request");
  jc_http_check_req(L, 2, "http_loop:add");
  /* A slot whose set-up raised holds a transfer never added: reclaim it. */
  for (i = 0; i < lp->cap; i++)
    if (lp->slots[i] != NULL && !lp->slots[i]->added && !lp->slots[i]->done)
      jc_http_loop_free(lp, i);
  for (i = 0; i < lp->cap && lp->slots[i] != NULL; i++) {}
  if (i == lp->cap) {
    size_t ncap = lp->cap ? lp->cap * 2 : 16;
    jc_http_xfer **ns;
    if (ncap > JC_HTTP_LOOP_MAX)
      return luaL_error(L, "http_loop:add: more than %d transfers in flight",
                        JC_HTTP_LOOP_MAX);
    ns = (jc_http_xfer **)lp->allocf(lp->allocud, lp->slots,
                                     lp->cap * sizeof *ns, ncap * sizeof *ns);
    if (ns == NULL) jc_http_nomem(L);
    memset(ns + lp->cap, 0, (ncap - lp->cap) * sizeof *ns);
    lp->slots = ns;
    lp->cap = ncap;
  }
  x = (jc_http_xfer *)lp->allocf(lp->allocud, NULL, 0, sizeof *x);
  if (x == NULL) jc_http_nomem(L);
  memset(x, 0, sizeof *x);
  lp->slots[i] = x;                 /* owned by the loop from here on */
  jc_http_xfer_setup(L, x, 2, "http_loop:add", 1);
  mc = curl_multi_add_handle(lp->multi, x->easy);
  if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
  jc_http_xfer_start(x);
  if (mc != CURLM_OK) {             /* cannot start: reported by 'wait' */
    x->result = CURLE_FAILED_INIT;
    x->end_ms = x->start_ms;
    x->done = 1;
  } else {
    x->added = 1;
    lp->active++;
  }
  lua_pushinteger(L, (lua_Integer)(i + 1));
  return 1;
}

/* Push { id = i + 1, res = ... } or { id = i + 1, err = ... } for the
** finished transfer in slot 'i', then free it. [-0, +1, m] */
static void jc_http_loop_push_done(lua_State *L, jc_http_loop *lp, size_t i) {
  int ok;
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)(i + 1));
  lua_setfield(L, -2, "id");
  ok = jc_http_push_result(L, lp->slots[i]);
  lua_setfield(L, -2, ok ? "res" : "err");
  jc_http_loop_free(lp, i);
}

/*
** loop:wait(timeout_ms) -> done
**
** Drive the transfers until at least one has finished, 'timeout_ms'
** (number >= 0, milliseconds) has passed, or a signal caught by
** core.signal_catch arrived. 'done' is an array (possibly empty) of
** { id = integer, res = table } or { id = integer, err = table }, res/err
** as for core.http_request; those transfers are freed. Raises on out of
** memory or a broken multi handle. Stack: [-1|2, +1, e]
*/
static int jc_http_loop_wait(lua_State *L) {
  jc_http_loop *lp = jc_http_loop_check(L);
  lua_Number timeout = luaL_checknumber(L, 2);
  double deadline;
  int n = 0;
  luaL_argcheck(L, timeout >= 0, 2, "timeout_ms must be >= 0");
  if (timeout > JC_HTTP_MAX_MS) timeout = JC_HTTP_MAX_MS;
  deadline = jc_http_now_ms() + (double)timeout;
  lua_settop(L, 2);
  lua_newtable(L);
  for (;;) {
    CURLMsg *msg;
    CURLMcode mc;
    int running = 0, queued;
    size_t i;
    double left;
    for (i = 0; i < lp->cap; i++)   /* could not start: done already */
      if (lp->slots[i] != NULL && lp->slots[i]->done && !lp->slots[i]->added) {
        jc_http_loop_push_done(L, lp, i);
        lua_rawseti(L, 3, ++n);
      }
    if (lp->active > 0) {
      mc = curl_multi_perform(lp->multi, &running);
      if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
      if (mc != CURLM_OK)
        return luaL_error(L, "http_loop:wait: curl_multi_perform failed (%s)",
                          curl_multi_strerror(mc));
      while ((msg = curl_multi_info_read(lp->multi, &queued)) != NULL) {
        char *priv = NULL;
        jc_http_xfer *x;
        if (msg->msg != CURLMSG_DONE) continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        x = (jc_http_xfer *)(void *)priv;
        if (x == NULL || x->done) continue;
        x->result = msg->data.result;
        x->end_ms = jc_http_now_ms();
        x->done = 1;
        for (i = 0; i < lp->cap && lp->slots[i] != x; i++) {}
        if (i < lp->cap) {
          jc_http_loop_push_done(L, lp, i);
          lua_rawseti(L, 3, ++n);
        }
      }
    }
    if (n > 0 || jc_sig_caught[1] || jc_sig_caught[2]) break;
    left = deadline - jc_http_now_ms();
    if (left <= 0) break;
    if (left > JC_HTTP_LOOP_POLL_MS) left = JC_HTTP_LOOP_POLL_MS;
    if (lp->active == 0) {
      /* Nothing to drive: a plain timer wait (curl_multi_poll would return
      ** at once with no handles on some versions). */
      struct timespec ts;
      ts.tv_sec = (time_t)(left / 1000);
      ts.tv_nsec = (long)((left - (double)ts.tv_sec * 1000) * 1e6);
      nanosleep(&ts, NULL);   /* EINTR (a signal) just ends the nap */
    } else {
      mc = curl_multi_poll(lp->multi, NULL, 0, (int)(left + 1), NULL);
      if (mc == CURLM_OUT_OF_MEMORY) jc_http_nomem(L);
      if (mc != CURLM_OK)
        return luaL_error(L, "http_loop:wait: curl_multi_poll failed (%s)",
                          curl_multi_strerror(mc));
    }
  }
  return 1;
}

/*
** loop:cancel(id) -> boolean
**
** Drop the transfer 'id' (integer from 'add') if it is still in flight;
** its result is never returned. Returns true when one was dropped.
** Stack: [-2, +1, e]
*/
static int jc_http_loop_cancel(lua_State *L) {
  jc_http_loop *lp = jc_http_loop_check(L);
  lua_Integer id = luaL_checkinteger(L, 2);
  if (id < 1 || (size_t)id > lp->cap || lp->slots[id - 1] == NULL) {
    lua_pushboolean(L, 0);
    return 1;
  }
  jc_http_loop_free(lp, (size_t)(id - 1));
  lua_pushboolean(L, 1);
  return 1;
}

/*
** loop:count() -> integer: transfers added and not yet returned by 'wait'.
** Stack: [-1, +1, e]
*/
static int jc_http_loop_count(lua_State *L) {
  jc_http_loop *lp = jc_http_loop_check(L);
  size_t i, c = 0;
  for (i = 0; i < lp->cap; i++) if (lp->slots[i] != NULL) c++;
  lua_pushinteger(L, (lua_Integer)c);
  return 1;
}

/* ---------------------------------------------------------------------- */
/* Signals and process ids, for the batch scheduler                        */
/* ---------------------------------------------------------------------- */

/* The handler only sets a flag (async-signal-safe); the loop's 'wait'
** returns when it sees one and Lua decides what to do. */
static void jc_sig_handler(int sig) {
  if (sig == SIGINT) jc_sig_caught[1] = 1;
  else if (sig == SIGTERM) jc_sig_caught[2] = 1;
}

/*
** core.signal_catch(on) -> true
**
** With 'on' true, catch SIGINT and SIGTERM (the process-wide handler sets a
** flag read by core.signal_take; no SA_RESTART, so a blocking poll wakes);
** with 'on' false, restore the default actions. Process-wide by nature
** (a signal disposition is). Returns nil, message when sigaction fails.
** Stack: [-1, +1|2, -]
*/
static int jc_signal_catch(lua_State *L) {
  struct sigaction sa;
  int on = lua_toboolean(L, 1);
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on ? jc_sig_handler : SIG_DFL;
  if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, "sigaction failed");
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/*
** core.signal_take() -> "SIGINT" | "SIGTERM" | nil
**
** The first caught signal not taken yet (SIGTERM before SIGINT), cleared
** as it is returned. Stack: [-0, +1, -]
*/
static int jc_signal_take(lua_State *L) {
  if (jc_sig_caught[2]) {
    jc_sig_caught[2] = 0;
    lua_pushliteral(L, "SIGTERM");
  } else if (jc_sig_caught[1]) {
    jc_sig_caught[1] = 0;
    lua_pushliteral(L, "SIGINT");
  } else {
    lua_pushnil(L);
  }
  return 1;
}

/*
** core.process_ids() -> pid, ppid (integers): this process and its parent
** (1 or a subreaper once the parent has died). Stack: [-0, +2, -]
*/
static int jc_process_ids(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  lua_pushinteger(L, (lua_Integer)getppid());
  return 2;
}

/*
** core.fsync(path) -> true | nil, message: open 'path' (a file or a
** folder) read-only and fsync(2) it, so what was written to it, or the
** names renamed into a folder, reach the disk before the caller goes on.
** Linux syncs the file, not the descriptor, so a file written and closed
** through io.open is synced by its path. Stack: [-0, +1|2, m]
*/
static int jc_fsync(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int fd, rc, err;
  do fd = open(path, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    err = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(err));
    return 2;
  }
  do rc = fsync(fd); while (rc != 0 && errno == EINTR);
  err = errno;
  close(fd);
  if (rc != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot fsync %s: %s", path, strerror(err));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/*
** core.create(path, mode) -> true | nil, "<path>: <reason>" (io.open's
** message): create the file 'path'
** when it does not exist, with permission bits 'mode' (an integer, e.g.
** 416 = 0640; the process umask still clears bits), and leave an existing
** file as it is. io.open creates files 0666 less the umask, and nginx runs
** its workers with umask 0: an evidence log made that way is writable by
** every local user. Stack: [-0, +1|2, m]
*/
static int jc_create(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer mode = luaL_checkinteger(L, 2);
  int fd, err;
  luaL_argcheck(L, mode >= 0 && mode <= 0777, 2, "permission bits 0..0777");
  do fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY,
               (mode_t)mode);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    err = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(err));   /* as io.open */
    return 2;
  }
  close(fd);
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg jc_http_request_meta[] = {
  {"__gc", jc_http_request_gc},
  {"close", jc_http_request_gc},
  {NULL, NULL}
};

static const luaL_Reg jc_http_many_meta[] = {
  {"__gc", jc_http_many_gc},
  {"close", jc_http_many_gc},
  {NULL, NULL}
};

static const luaL_Reg jc_http_loop_meta[] = {
  {"__gc", jc_http_loop_gc},
  {"close", jc_http_loop_gc},
  {"add", jc_http_loop_add},
  {"wait", jc_http_loop_wait},
  {"cancel", jc_http_loop_cancel},
  {"count", jc_http_loop_count},
  {NULL, NULL}
};

static const luaL_Reg jc_http_funcs[] = {
  {"http_request", jc_http_request},
  {"http_many", jc_http_many},
  {"http_loop", jc_http_loop_new},
  {"signal_catch", jc_signal_catch},
  {"signal_take", jc_signal_take},
  {"process_ids", jc_process_ids},
  {"fsync", jc_fsync},
  {"create", jc_create},
  {NULL, NULL}
};

/* Create a box metatable 'name' with 'meta' (also its __index, so 'close'
** is a method) and __name. [-0, +0, m] */
static void jc_http_newmeta(lua_State *L, const char *name,
                            const luaL_Reg *meta) {
  if (luaL_newmetatable(L, name)) {
    luaL_setfuncs(L, meta, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
#if LUA_VERSION_NUM >= 504
    lua_pushcfunction(L, meta[0].func);
    lua_setfield(L, -2, "__close");
#endif
  }
  lua_pop(L, 1);
}

/*
** Add http_request and http_many to the module table at the top of the
** stack, create the box metatables, and run curl_global_init once per
** process (guarded by a static flag; it is not thread-safe before 7.84,
** so load the module before starting threads). Raises if curl cannot be
** initialised. Stack: [-0, +0, e]
*/
void jc_transport_open(lua_State *L) {
  if (!jc_http_curl_ready) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      luaL_error(L, "jsoncontract.core: curl_global_init failed");
    jc_http_curl_ready = 1;
  }
  jc_http_newmeta(L, JC_HTTP_REQUEST_MT, jc_http_request_meta);
  jc_http_newmeta(L, JC_HTTP_MANY_MT, jc_http_many_meta);
  jc_http_newmeta(L, JC_HTTP_LOOP_MT, jc_http_loop_meta);
  luaL_setfuncs(L, jc_http_funcs, 0);
}
