package api

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub/console"
)

// The operator's console (CONSOLE_PASSWORD): a sign-in form, the session
// cookie, and the pages, each at a link of its own. Its pages are one
// shell (web/console/index.html) that reads the /api/v1/internal/ routes
// with the session's cookie; nothing of the data is ever HTML.

// ConsoleCookie is the console's session cookie.
const ConsoleCookie = "roomhub_console"

// csrfHeader carries a console page's CSRF token on every change.
const csrfHeader = "X-CSRF-Token"

// consoleCSP lets a console page load its own files and talk to its own
// hub, nothing else: no inline code, no framing, forms only to itself.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// consoleLoginMax bounds a sign-in form's body.
const consoleLoginMax = 4 << 10

// consoleSide is the console's state on this server: nil while it is off.
type consoleSide struct {
	sessions *console.Sessions
	files    fs.FS // web/console: index.html and login.html (templates), the assets
	pages    *template.Template
	logins   *userLimiter // sign-in attempts per client address
}

// UseConsole serves the operator's console, its sessions kept by
// sessions, its pages and files from files (web.Console()). Call it before
// serving, and only with CONSOLE_PASSWORD set.
func (s *Server) UseConsole(sessions *console.Sessions, files fs.FS) error {
	pages, err := template.ParseFS(files, "index.html", "login.html")
	if err != nil {
		return fmt.Errorf("console pages: %w", err)
	}
	s.console = &consoleSide{sessions: sessions, files: files, pages: pages, logins: newUserLimiter(s.cfg.ConsoleLogins)}
	return nil
}

// consoleRoutes mounts the console's routes, 404 while it is off.
func (s *Server) consoleRoutes(e *echo.Echo) {
	on := s.consoleOn
	for _, p := range []string{"/console", "/console/", "/console/notifications/:id", "/console/users/:id", "/console/dead", "/console/topics/:key"} {
		e.GET(p, s.consolePage, on)
	}
	e.GET("/console/assets/*", s.consoleAsset, on)
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		e.Add(m, "/console/api/*", s.consoleAPI, on)
	}
	e.POST("/console/login", s.consoleLogin, on)
	e.POST("/console/logout", s.consoleLogout, on)
}

// consoleOn answers 404 while the console is off.
func (s *Server) consoleOn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.console == nil {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

// consoleHeaders are every console answer's: its CSP, no caching (a page
// holds a CSRF token), no sniffing, no referrer beyond the hub.
func consoleHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
}

// session is the request's console session, or console.ErrNoSession.
func (s *Server) session(r *http.Request) (console.Session, error) {
	ck, err := r.Cookie(ConsoleCookie)
	if err != nil {
		return console.Session{}, console.ErrNoSession
	}
	return s.console.sessions.Verify(r.Context(), ck.Value, time.Now())
}

// consolePage serves a console page: signed in, the shell with the
// session's CSRF token; else the sign-in form, which comes back here.
func (s *Server) consolePage(c echo.Context) error {
	r := c.Request()
	ss, err := s.session(r)
	if errors.Is(err, console.ErrNoSession) {
		return s.loginForm(c, http.StatusOK, r.URL.Path, "")
	}
	if err != nil {
		return err
	}
	csrf, err := s.console.sessions.CSRF(r.Context(), ss)
	if err != nil {
		return err
	}
	return s.consoleHTML(c, http.StatusOK, "index.html", map[string]string{"Lang": consoleLang(r), "CSRF": csrf})
}

// loginForm answers the sign-in form with status, to come back to next,
// with the problem (a key of its texts) shown.
func (s *Server) loginForm(c echo.Context, status int, next, problem string) error {
	lang := consoleLang(c.Request())
	return s.consoleHTML(c, status, "login.html", map[string]any{
		"Lang": lang, "Next": safeNext(next), "Problem": problem, "T": loginTexts[lang]})
}

// consoleHTML answers the page template name filled with data.
func (s *Server) consoleHTML(c echo.Context, status int, name string, data any) error {
	w := c.Response()
	consoleHeaders(w)
	w.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	w.WriteHeader(status)
	return s.console.pages.ExecuteTemplate(w, name, data)
}

// checkCSRF is nil when token is ss's CSRF token, else 403.
func (s *Server) checkCSRF(r *http.Request, ss console.Session, token string) error {
	ok, err := s.console.sessions.CheckCSRF(r.Context(), ss, token)
	if err != nil {
		return err
	}
	if !ok {
		return errForbidden("missing or wrong CSRF token (the page's, in " + csrfHeader + " or the form's csrf)")
	}
	return nil
}

// consoleLogin serves POST /console/login (form: password, next): the
// password compared in constant time, a client address's attempts
// limited; right, the session's cookie and a way back to next.
func (s *Server) consoleLogin(c echo.Context) error {
	r, w := c.Request(), c.Response()
	if !sameOrigin(r) {
		return errForbidden("sign in from the console's own page")
	}
	r.Body = http.MaxBytesReader(w, r.Body, consoleLoginMax)
	if err := r.ParseForm(); err != nil {
		return errBadRequest("a sign-in is a form of at most 4 KiB")
	}
	next := r.PostForm.Get("next")
	if wait, ok := s.console.logins.take(clientAddr(r, s.cfg.TrustedProxy), time.Now()); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		return s.loginForm(c, http.StatusTooManyRequests, next, "tooMany")
	}
	if !s.console.sessions.CheckPassword(r.PostForm.Get("password")) {
		return s.loginForm(c, http.StatusUnauthorized, next, "wrong")
	}
	ss, value, err := s.console.sessions.Issue(r.Context(), time.Now())
	if err != nil {
		return err
	}
	http.SetCookie(w, s.consoleCookie(r, value, ss.Expires))
	consoleHeaders(w)
	return c.Redirect(http.StatusSeeOther, safeNext(next))
}

// consoleLogout serves POST /console/logout (form: csrf): the session
// signed out on every instance, the cookie cleared.
func (s *Server) consoleLogout(c echo.Context) error {
	r, w := c.Request(), c.Response()
	if !sameOrigin(r) {
		return errForbidden("sign out from the console's own page")
	}
	r.Body = http.MaxBytesReader(w, r.Body, consoleLoginMax)
	ss, err := s.session(r)
	switch {
	case errors.Is(err, console.ErrNoSession): // signed out already
	case err != nil:
		return err
	default:
		if err := s.checkCSRF(r, ss, r.FormValue("csrf")); err != nil {
			return err
		}
		if err := s.console.sessions.Revoke(r.Context(), ss, time.Now()); err != nil {
			return err
		}
	}
	http.SetCookie(w, s.consoleCookie(r, "", time.Unix(0, 0)))
	consoleHeaders(w)
	return c.Redirect(http.StatusSeeOther, "/console/")
}

// consoleCookie is the session cookie (value "" and a past expiry clear
// it): HttpOnly, SameSite=Strict, Secure over TLS (the hub's own, or a
// proxy's that says so in X-Forwarded-Proto, behind TRUSTED_PROXY_HEADER).
func (s *Server) consoleCookie(r *http.Request, value string, expires time.Time) *http.Cookie {
	secure := r.TLS != nil || (s.cfg.TrustedProxy != "" && r.Header.Get("X-Forwarded-Proto") == "https")
	ck := &http.Cookie{Name: ConsoleCookie, Value: value, Path: "/", Expires: expires, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
	if value == "" {
		ck.MaxAge = -1
	} else {
		ck.MaxAge = int(time.Until(expires).Seconds())
	}
	return ck
}

// consoleAsset serves the console's scripts and styles (no data: they
// need no session).
func (s *Server) consoleAsset(c echo.Context) error {
	name := strings.TrimPrefix(c.Param("*"), "/")
	if !fs.ValidPath(name) || name == "." || strings.HasSuffix(name, ".html") {
		return echo.ErrNotFound
	}
	if fi, err := fs.Stat(s.console.files, name); err != nil || fi.IsDir() {
		return echo.ErrNotFound
	}
	consoleHeaders(c.Response())
	c.Response().Header().Set("Cache-Control", "no-cache") // revalidated: a deploy reaches open consoles at their next load
	http.ServeFileFS(c.Response(), c.Request(), s.console.files, name)
	return nil
}

// consoleAPI serves /console/api/<route> as /api/v1/internal/<route>, for
// the console's session alone (never the internal key): behind an ingress
// that carries /console and not /api/v1/internal/, the console still reads
// and changes what it shows.
func (s *Server) consoleAPI(c echo.Context) error {
	r := c.Request()
	raw := "/api/v1/internal" + strings.TrimPrefix(r.URL.EscapedPath(), "/console/api")
	p, err := url.PathUnescape(raw)
	if err != nil || path.Clean(p) != p {
		return echo.ErrNotFound
	}
	in := r.Clone(r.Context())
	in.Header.Del("X-Internal-Key") // so the routes' operator check asks for the session

	in.URL.Path, in.URL.RawPath = p, raw
	in.RequestURI = in.URL.RequestURI()
	s.e.ServeHTTP(c.Response(), in)
	return nil
}

// operator lets in the backend's internal key or, on a hub with the
// console, its session: every request from the console's own origin, and
// a change only with the page's CSRF token.
func (s *Server) operator(key string) echo.MiddlewareFunc {
	internal := requireInternal(key)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		byKey := internal(next)
		return func(c echo.Context) error {
			r := c.Request()
			if s.console == nil || r.Header.Get("X-Internal-Key") != "" {
				return byKey(c)
			}
			ss, err := s.session(r)
			if errors.Is(err, console.ErrNoSession) {
				return errUnauthorized("missing or wrong internal key, and no console session")
			}
			if err != nil {
				return err
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				if !sameOrigin(r) {
					return errForbidden("a console change comes from the console's own origin")
				}
				if err := s.checkCSRF(r, ss, r.Header.Get(csrfHeader)); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// sameOrigin reports whether r's Origin is the hub's own.
func sameOrigin(r *http.Request) bool {
	u, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && u.Host != "" && u.Host == r.Host
}

// safeNext is where a sign-in goes back to: a console page's path, else
// the overview (never another site).
func safeNext(p string) string {
	if !strings.HasPrefix(p, "/console/") || strings.ContainsAny(p, "\\\r\n") || strings.Contains(p, "//") || strings.Contains(p, "/..") {
		return "/console/"
	}
	return p
}

// consoleLang is the console's language: Korean when the browser asks for
// it first, else English.
func consoleLang(r *http.Request) string {
	first, _, _ := strings.Cut(r.Header.Get("Accept-Language"), ",")
	if strings.HasPrefix(strings.TrimSpace(strings.ToLower(first)), "ko") {
		return "ko"
	}
	return "en"
}

// loginTexts are the sign-in form's words, by language.
var loginTexts = map[string]map[string]string{
	"en": {"title": "roomhub console", "heading": "Sign in to the console", "password": "Password", "submit": "Sign in",
		"wrong": "Wrong password.", "tooMany": "Too many attempts from here: wait a few seconds, then try again."},
	"ko": {"title": "roomhub 콘솔", "heading": "콘솔 로그인", "password": "비밀번호", "submit": "로그인",
		"wrong": "비밀번호가 틀렸습니다.", "tooMany": "시도가 너무 많습니다. 잠시 후 다시 시도하세요."},
}
