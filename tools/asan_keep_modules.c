/*
** Preloaded in the ASan test run only: C modules stay loaded until the
** process ends. Lua closes its C modules (dlclose) when the state closes,
** before LeakSanitizer reports at exit, so a leak inside a module would be
** shown as "<unknown module>" and no suppression could name it.
*/
int dlclose(void *handle);

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
