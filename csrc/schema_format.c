/*
** schema_format.c: 'format' checks and RFC 3986 reference resolution for
** the schema gate (see schema_format.h). Pure C over byte strings; the only
** Lua call is the luaL_Buffer that 'jc_uri_resolve' builds its result in.
*/
#include "schema_format.h"

#include <arpa/inet.h>
#include <string.h>

static const struct { const char *name; int id; } jc_formats[] = {
  { "date", JC_FMT_DATE }, { "date-time", JC_FMT_DATETIME },
  { "time", JC_FMT_TIME }, { "duration", JC_FMT_DURATION },
  { "email", JC_FMT_EMAIL }, { "hostname", JC_FMT_HOSTNAME },
  { "ipv4", JC_FMT_IPV4 }, { "ipv6", JC_FMT_IPV6 }, { "uri", JC_FMT_URI },
  { "uri-reference", JC_FMT_URIREF }, { "uuid", JC_FMT_UUID },
  { "regex", JC_FMT_REGEX }, { "json-pointer", JC_FMT_JSONPTR },
  { "relative-json-pointer", JC_FMT_RELJSONPTR }, { "iri", JC_FMT_IRI },
  { "iri-reference", JC_FMT_IRIREF }, { "uri-template", JC_FMT_URITEMPLATE },
  { "idn-email", JC_FMT_IDNEMAIL },
  { NULL, 0 }
};

int jc_format_id(const char *name) {
  int i;
  for (i = 0; jc_formats[i].name != NULL; i++)
    if (strcmp(jc_formats[i].name, name) == 0) return jc_formats[i].id;
  return JC_FMT_NONE;
}

static int jc_isdigit(int ch) { return ch >= '0' && ch <= '9'; }
static int jc_isalpha(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}
static int jc_ishex(int ch) {
  return jc_isdigit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static int jc_digits(const char *s, size_t n, int *out) {
  size_t i;
  int v = 0;
  for (i = 0; i < n; i++) {
    if (!jc_isdigit((unsigned char)s[i])) return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

/* full-date = YYYY-MM-DD, a real calendar day (RFC 3339 §5.6, §5.7). */
static int jc_check_date(const char *s, size_t len) {
  static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
  int y, m, d, max;
  if (len != 10 || s[4] != '-' || s[7] != '-') return 0;
  if (!jc_digits(s, 4, &y) || !jc_digits(s + 5, 2, &m) ||
      !jc_digits(s + 8, 2, &d))
    return 0;
  if (m < 1 || m > 12 || d < 1) return 0;
  max = mdays[m - 1];
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) max = 29;
  return d <= max;
}

/* full-time = HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); a leap second only at
** 23:59:60 UTC (RFC 3339 §5.6, §5.7). */
static int jc_check_time(const char *s, size_t len) {
  int h, mi, sec, oh = 0, om = 0, sign = 0, utc;
  size_t i = 8;
  if (len < 9 || s[2] != ':' || s[5] != ':') return 0;
  if (!jc_digits(s, 2, &h) || !jc_digits(s + 3, 2, &mi) ||
      !jc_digits(s + 6, 2, &sec))
    return 0;
  if (h > 23 || mi > 59 || sec > 60) return 0;
  if (s[i] == '.') {
    size_t start = ++i;
    while (i < len && jc_isdigit((unsigned char)s[i])) i++;
    if (i == start) return 0;
  }
  if (i >= len) return 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != len) return 0;
  } else if (s[i] == '+' || s[i] == '-') {
    sign = s[i] == '+' ? 1 : -1;
    if (len - i != 6 || s[i + 3] != ':') return 0;
    if (!jc_digits(s + i + 1, 2, &oh) || !jc_digits(s + i + 4, 2, &om))
      return 0;
    if (oh > 23 || om > 59) return 0;
  } else {
    return 0;
  }
  if (sec == 60) {
    utc = ((h * 60 + mi - sign * (oh * 60 + om)) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return 0;
  }
  return 1;
}

static int jc_check_datetime(const char *s, size_t len) {
  if (len < 20 || (s[10] != 'T' && s[10] != 't')) return 0;
  return jc_check_date(s, 10) && jc_check_time(s + 11, len - 11);
}

/* RFC 3339 Appendix A duration: P(date[T time] | T time | nW); the units of
** each part appear in order and without gaps (Y M D, H M S). */
static int jc_check_duration(const char *s, size_t len) {
  static const char dunits[] = "YMD", tunits[] = "HMS";
  size_t i = 1;
  int last = -1, intime = 0, any = 0, timeany = 0;
  if (len < 3 || s[0] != 'P') return 0;
  if (s[len - 1] == 'W') {
    for (i = 1; i < len - 1; i++)
      if (!jc_isdigit((unsigned char)s[i])) return 0;
    return len > 2;
  }
  while (i < len) {
    size_t start = i;
    const char *units, *u;
    int k;
    if (s[i] == 'T') {
      if (intime) return 0;
      intime = 1;
      last = -1;
      i++;
      continue;
    }
    while (i < len && jc_isdigit((unsigned char)s[i])) i++;
    if (i == start || i >= len) return 0;
    units = intime ? tunits : dunits;
    u = strchr(units, s[i]);
    if (u == NULL || s[i] == '\0') return 0;
    k = (int)(u - units);
    if (last >= 0 && k != last + 1) return 0;
    last = k;
    any = 1;
    if (intime) timeany = 1;
    i++;
  }
  if (intime && !timeany) return 0;
  return any;
}

/* A DNS name: labels of 1..63 letters, digits and '-', not starting or
** ending with '-', 253 bytes at most. */
static int jc_check_hostname_x(const char *s, size_t len, int intl);
static int jc_check_hostname(const char *s, size_t len) {
  return jc_check_hostname_x(s, len, 0);
}

/* 'intl': labels may hold non-ASCII (UTF-8) characters, unchecked beyond
** that (no IDNA 2008 tables here). */
static int jc_check_hostname_x(const char *s, size_t len, int intl) {
  size_t i, lab = 0;
  if (len == 0 || len > 253) return 0;
  for (i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '.') {
      if (lab == 0 || s[i - 1] == '-') return 0;
      lab = 0;
    } else if (jc_isalpha(ch) || jc_isdigit(ch) || ch == '-' ||
               (intl && ch >= 0x80)) {
      if (lab == 0 && ch == '-') return 0;
      if (++lab > 63) return 0;
    } else {
      return 0;
    }
  }
  if (s[len - 1] == '-') return 0;
  if (lab == 0) return 0;   /* trailing dot */
  /* A-labels ("xn--", IDNA 2008) are not decoded or checked here */
  return 1;
}

static int jc_check_ipv4(const char *s, size_t len) {
  size_t i = 0;
  int part;
  for (part = 0; part < 4; part++) {
    size_t start = i;
    int v = 0;
    if (part > 0) {
      if (i >= len || s[i] != '.') return 0;
      start = ++i;
    }
    while (i < len && jc_isdigit((unsigned char)s[i]) && i - start < 4) {
      v = v * 10 + (s[i] - '0');
      i++;
    }
    if (i == start || i - start > 3 || v > 255) return 0;
    if (i - start > 1 && s[start] == '0') return 0;
  }
  return i == len;
}

static int jc_check_ipv6(const char *s, size_t len) {
  char buf[64];
  unsigned char out[16];
  size_t i;
  if (len == 0 || len >= sizeof buf) return 0;
  for (i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!jc_ishex(ch) && ch != ':' && ch != '.') return 0;
  }
  memcpy(buf, s, len);
  buf[len] = '\0';
  if (strchr(buf, '.') != NULL) {   /* dotted tail: check it strictly */
    const char *tail = strrchr(buf, ':');
    if (tail == NULL || !jc_check_ipv4(tail + 1, strlen(tail + 1))) return 0;
  }
  return inet_pton(AF_INET6, buf, out) == 1;
}

static int jc_check_uuid(const char *s, size_t len) {
  size_t i;
  if (len != 36) return 0;
  for (i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return 0;
    } else if (!jc_ishex((unsigned char)s[i])) {
      return 0;
    }
  }
  return 1;
}

static int jc_check_jsonptr(const char *s, size_t len) {
  size_t i;
  if (len == 0) return 1;
  if (s[0] != '/') return 0;
  for (i = 0; i < len; i++)
    if (s[i] == '~' && (i + 1 >= len || (s[i + 1] != '0' && s[i + 1] != '1')))
      return 0;
  return 1;
}

static int jc_check_reljsonptr(const char *s, size_t len) {
  size_t i = 0;
  while (i < len && jc_isdigit((unsigned char)s[i])) i++;
  if (i == 0 || (i > 1 && s[0] == '0')) return 0;
  if (i == len) return 1;
  if (s[i] == '#') return i + 1 == len;
  return jc_check_jsonptr(s + i, len - i);
}

/* ---- URIs (RFC 3986 §3, §4) ------------------------------------------ */

static int jc_uri_unreserved(int ch) {
  return jc_isalpha(ch) || jc_isdigit(ch) || ch == '-' || ch == '.' ||
         ch == '_' || ch == '~';
}
static int jc_uri_subdelim(int ch) { return ch != 0 && strchr("!$&'()*+,;=", ch) != NULL; }

/* Are s[a..b) pchar-or-'extra' characters with valid %HH? IRIs (RFC 3987)
** also allow any non-ASCII character (the string is UTF-8 already). */
static int jc_uri_chars(const char *s, size_t a, size_t b, const char *extra,
                        int iri) {
  size_t i;
  for (i = a; i < b; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x80 && iri) continue;
    if (ch == '%') {
      if (i + 2 >= b || !jc_ishex((unsigned char)s[i + 1]) ||
          !jc_ishex((unsigned char)s[i + 2]))
        return 0;
      i += 2;
    } else if (!jc_uri_unreserved(ch) && !jc_uri_subdelim(ch) &&
               strchr(extra, ch) == NULL) {
      return 0;
    }
  }
  return 1;
}

/* URI-reference syntax; 'absolute' requires a scheme. */
static int jc_check_uri(const char *s, size_t len, int absolute, int iri) {
  size_t i = 0, end, q;
  int has_scheme = 0;
  if (len > 0 && jc_isalpha((unsigned char)s[0])) {
    i = 1;
    while (i < len && (jc_isalpha((unsigned char)s[i]) ||
                       jc_isdigit((unsigned char)s[i]) || s[i] == '+' ||
                       s[i] == '-' || s[i] == '.'))
      i++;
    if (i < len && s[i] == ':') { has_scheme = 1; i++; }
    else i = 0;
  }
  if (absolute && !has_scheme) return 0;
  if (i + 1 < len && s[i] == '/' && s[i + 1] == '/') {
    size_t a = i + 2, at, host, colon;
    end = a;
    while (end < len && s[end] != '/' && s[end] != '?' && s[end] != '#') end++;
    host = a;
    for (at = a; at < end; at++)
      if (s[at] == '@') host = at + 1;
    if (host > a && !jc_uri_chars(s, a, host - 1, ":", iri)) return 0;
    if (host < end && s[host] == '[') {
      size_t close = host;
      while (close < end && s[close] != ']') close++;
      if (close >= end) return 0;
      if (s[host + 1] == 'v' || s[host + 1] == 'V') {   /* IPvFuture */
        size_t q2 = host + 2;
        while (q2 < close && jc_ishex((unsigned char)s[q2])) q2++;
        if (q2 == host + 2 || q2 >= close || s[q2] != '.' || q2 + 1 >= close ||
            !jc_uri_chars(s, q2 + 1, close, ":", 0))
          return 0;
      } else if (!jc_check_ipv6(s + host + 1, close - host - 1)) {
        return 0;
      }
      colon = close + 1;
      if (colon < end && s[colon] != ':') return 0;
    } else {
      colon = host;
      while (colon < end && s[colon] != ':') colon++;
      if (!jc_uri_chars(s, host, colon, "", iri)) return 0;
    }
    if (colon < end) {
      for (q = colon + 1; q < end; q++)
        if (!jc_isdigit((unsigned char)s[q])) return 0;
    }
    i = end;
  } else if (!has_scheme) {
    /* a relative path's first segment has no ':' */
    for (q = i; q < len && s[q] != '/' && s[q] != '?' && s[q] != '#'; q++)
      if (s[q] == ':') return 0;
  }
  end = i;
  while (end < len && s[end] != '?' && s[end] != '#') end++;
  if (!jc_uri_chars(s, i, end, ":@/", iri)) return 0;
  i = end;
  if (i < len && s[i] == '?') {
    end = ++i;
    while (end < len && s[end] != '#') end++;
    if (!jc_uri_chars(s, i, end, ":@/?", iri)) return 0;
    i = end;
  }
  if (i < len && s[i] == '#') {
    if (!jc_uri_chars(s, i + 1, len, ":@/?", iri)) return 0;
  }
  return 1;
}

/* RFC 6570 URI Template (level 4): literals and {op varspec,...}. */
static int jc_check_uritemplate(const char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '{') {
      size_t j = i + 1;
      if (j < len && strchr("+#./;?&=,!@|", s[j]) != NULL && s[j] != '\0') j++;
      for (;;) {   /* varspec */
        size_t start = j;
        int dot_ok = 0;
        while (j < len) {
          if (jc_isalpha((unsigned char)s[j]) || jc_isdigit((unsigned char)s[j]) ||
              s[j] == '_') {
            j++;
            dot_ok = 1;
          } else if (s[j] == '%' && j + 2 < len && jc_ishex((unsigned char)s[j + 1]) &&
                     jc_ishex((unsigned char)s[j + 2])) {
            j += 3;
            dot_ok = 1;
          } else if (s[j] == '.' && dot_ok && j + 1 < len && s[j + 1] != '.') {
            j++;
            dot_ok = 0;
          } else {
            break;
          }
        }
        if (j == start || s[j - 1] == '.') return 0;
        if (j < len && s[j] == ':') {
          size_t d = ++j;
          while (j < len && jc_isdigit((unsigned char)s[j])) j++;
          if (j == d || j - d > 4 || s[d] == '0') return 0;
        } else if (j < len && s[j] == '*') {
          j++;
        }
        if (j < len && s[j] == ',') { j++; continue; }
        break;
      }
      if (j >= len || s[j] != '}') return 0;
      i = j + 1;
    } else if (ch == '%') {
      if (i + 2 >= len || !jc_ishex((unsigned char)s[i + 1]) ||
          !jc_ishex((unsigned char)s[i + 2]))
        return 0;
      i += 3;
    } else if (ch <= 0x20 || ch == 0x7F || strchr("\"<>\\^`|}", ch) != NULL) {
      return 0;
    } else {
      i++;
    }
  }
  return 1;
}

/* local-part@domain (RFC 5321 §4.1.2): a dot-atom or a quoted string of
** at most JC_EMAIL_LOCAL_MAX octets, quotes included (§4.5.3.1.1); the
** domain a hostname or an address literal. */
#define JC_EMAIL_LOCAL_MAX 64
static int jc_check_email(const char *s, size_t len, int intl) {
  size_t at = len, i;
  for (i = len; i > 0; i--)
    if (s[i - 1] == '@') { at = i - 1; break; }
  if (at == len || at == 0 || at + 1 >= len) return 0;
  if (at > JC_EMAIL_LOCAL_MAX) return 0;
  if (s[0] == '"') {
    if (at < 2 || s[at - 1] != '"') return 0;
    for (i = 1; i < at - 1; i++) {
      if (s[i] == '\\') { i++; continue; }
      if (s[i] == '"' || (unsigned char)s[i] < 0x20) return 0;
    }
  } else {
    if (s[0] == '.' || s[at - 1] == '.') return 0;
    for (i = 0; i < at; i++) {
      unsigned char ch = (unsigned char)s[i];
      if (ch == '.') {
        if (s[i + 1] == '.') return 0;
      } else if (!jc_isalpha(ch) && !jc_isdigit(ch) && !(intl && ch >= 0x80) &&
                 strchr("!#$%&'*+-/=?^_`{|}~", ch) == NULL) {
        return 0;
      }
    }
  }
  if (s[at + 1] == '[') {
    const char *d = s + at + 2;
    size_t dl = len - at - 2;
    if (dl < 2 || d[dl - 1] != ']') return 0;
    dl--;
    if (dl > 5 && strncmp(d, "IPv6:", 5) == 0)
      return jc_check_ipv6(d + 5, dl - 5);
    return jc_check_ipv4(d, dl);
  }
  return jc_check_hostname_x(s + at + 1, len - at - 1, intl);
}

int jc_format_check(int id, const char *s, size_t len) {
  switch (id) {
    case JC_FMT_DATE: return jc_check_date(s, len);
    case JC_FMT_DATETIME: return jc_check_datetime(s, len);
    case JC_FMT_TIME: return jc_check_time(s, len);
    case JC_FMT_DURATION: return jc_check_duration(s, len);
    case JC_FMT_EMAIL: return jc_check_email(s, len, 0);
    case JC_FMT_IDNEMAIL: return jc_check_email(s, len, 1);
    case JC_FMT_HOSTNAME: return jc_check_hostname(s, len);
    case JC_FMT_IPV4: return jc_check_ipv4(s, len);
    case JC_FMT_IPV6: return jc_check_ipv6(s, len);
    case JC_FMT_URI: return jc_check_uri(s, len, 1, 0);
    case JC_FMT_URIREF: return jc_check_uri(s, len, 0, 0);
    case JC_FMT_IRI: return jc_check_uri(s, len, 1, 1);
    case JC_FMT_IRIREF: return jc_check_uri(s, len, 0, 1);
    case JC_FMT_URITEMPLATE: return jc_check_uritemplate(s, len);
    case JC_FMT_UUID: return jc_check_uuid(s, len);
    case JC_FMT_JSONPTR: return jc_check_jsonptr(s, len);
    case JC_FMT_RELJSONPTR: return jc_check_reljsonptr(s, len);
    default: return 1;
  }
}

/* ---- RFC 3986 §5.2 resolution ---------------------------------------- */

typedef struct jc_part { const char *s; size_t n; int has; } jc_part;
typedef struct jc_uri { jc_part scheme, auth, path, query, frag; } jc_uri;

static void jc_uri_split(const char *s, size_t len, jc_uri *u) {
  size_t i = 0, j;
  memset(u, 0, sizeof *u);
  if (len > 0 && jc_isalpha((unsigned char)s[0])) {
    j = 1;
    while (j < len && (jc_isalpha((unsigned char)s[j]) ||
                       jc_isdigit((unsigned char)s[j]) || s[j] == '+' ||
                       s[j] == '-' || s[j] == '.'))
      j++;
    if (j < len && s[j] == ':') {
      u->scheme.s = s; u->scheme.n = j; u->scheme.has = 1;
      i = j + 1;
    }
  }
  if (i + 1 < len && s[i] == '/' && s[i + 1] == '/') {
    j = i + 2;
    while (j < len && s[j] != '/' && s[j] != '?' && s[j] != '#') j++;
    u->auth.s = s + i + 2; u->auth.n = j - i - 2; u->auth.has = 1;
    i = j;
  }
  j = i;
  while (j < len && s[j] != '?' && s[j] != '#') j++;
  u->path.s = s + i; u->path.n = j - i; u->path.has = 1;
  i = j;
  if (i < len && s[i] == '?') {
    j = i + 1;
    while (j < len && s[j] != '#') j++;
    u->query.s = s + i + 1; u->query.n = j - i - 1; u->query.has = 1;
    i = j;
  }
  if (i < len && s[i] == '#') {
    u->frag.s = s + i + 1; u->frag.n = len - i - 1; u->frag.has = 1;
  }
}

/* remove_dot_segments (§5.2.4) of 'in' (length n, modified) into 'out';
** returns the output length. 'out' has room for n bytes. */
static size_t jc_uri_dots(char *in, size_t n, char *out) {
  char *p = in, *e = in + n;
  size_t o = 0;
  while (p < e) {
    size_t rest = (size_t)(e - p);
    if (rest >= 3 && memcmp(p, "../", 3) == 0) p += 3;
    else if (rest >= 2 && memcmp(p, "./", 2) == 0) p += 2;
    else if (rest >= 3 && memcmp(p, "/./", 3) == 0) p += 2;
    else if (rest == 2 && memcmp(p, "/.", 2) == 0) { p += 1; *p = '/'; }
    else if (rest >= 4 && memcmp(p, "/../", 4) == 0) {
      p += 3;
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
    } else if (rest == 3 && memcmp(p, "/..", 3) == 0) {
      p += 2; *p = '/';
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
    } else if ((rest == 1 && p[0] == '.') ||
               (rest == 2 && p[0] == '.' && p[1] == '.')) {
      p = e;
    } else {
      if (*p == '/') out[o++] = *p++;
      while (p < e && *p != '/') out[o++] = *p++;
    }
  }
  return o;
}

static void jc_add_part(luaL_Buffer *b, const jc_part *p) {
  luaL_addlstring(b, p->s, p->n);
}

void jc_uri_resolve(lua_State *L, const char *base, size_t blen,
                    const char *ref, size_t rlen) {
  jc_uri B, R;
  luaL_Buffer b;
  char *hold;
  jc_uri_split(base, blen, &B);
  jc_uri_split(ref, rlen, &R);
  /* scratch for paths, owned by the stack while the buffer is built */
  hold = (char *)lua_newuserdata(L, 2 * (blen + rlen) + 4);
  luaL_buffinit(L, &b);
  if (R.scheme.has) {
    jc_add_part(&b, &R.scheme);
    luaL_addchar(&b, ':');
    if (R.auth.has) { luaL_addstring(&b, "//"); jc_add_part(&b, &R.auth); }
    {
      size_t n;
      memcpy(hold, R.path.s, R.path.n);
      n = jc_uri_dots(hold, R.path.n, hold + R.path.n + 1);
      luaL_addlstring(&b, hold + R.path.n + 1, n);
    }
    if (R.query.has) { luaL_addchar(&b, '?'); jc_add_part(&b, &R.query); }
  } else {
    if (B.scheme.has) { jc_add_part(&b, &B.scheme); luaL_addchar(&b, ':'); }
    if (R.auth.has) {
      luaL_addstring(&b, "//");
      jc_add_part(&b, &R.auth);
      memcpy(hold, R.path.s, R.path.n);
      luaL_addlstring(&b, hold + R.path.n + 1,
                      jc_uri_dots(hold, R.path.n, hold + R.path.n + 1));
      if (R.query.has) { luaL_addchar(&b, '?'); jc_add_part(&b, &R.query); }
    } else {
      if (B.auth.has) { luaL_addstring(&b, "//"); jc_add_part(&b, &B.auth); }
      if (R.path.n == 0) {
        jc_add_part(&b, &B.path);
        if (R.query.has) { luaL_addchar(&b, '?'); jc_add_part(&b, &R.query); }
        else if (B.query.has) { luaL_addchar(&b, '?'); jc_add_part(&b, &B.query); }
      } else {
        size_t n = 0, k;
        if (R.path.s[0] == '/') {
          memcpy(hold, R.path.s, R.path.n);
          n = R.path.n;
        } else {
          if (B.auth.has && B.path.n == 0) {
            hold[n++] = '/';
          } else {
            k = B.path.n;
            while (k > 0 && B.path.s[k - 1] != '/') k--;
            memcpy(hold, B.path.s, k);
            n = k;
          }
          memcpy(hold + n, R.path.s, R.path.n);
          n += R.path.n;
        }
        luaL_addlstring(&b, hold + n + 1, jc_uri_dots(hold, n, hold + n + 1));
        if (R.query.has) { luaL_addchar(&b, '?'); jc_add_part(&b, &R.query); }
      }
    }
  }
  if (R.frag.has) { luaL_addchar(&b, '#'); jc_add_part(&b, &R.frag); }
  luaL_pushresult(&b);
  lua_remove(L, -2);   /* the scratch */
}
