// The admin page's script: live refresh, and the spec previewed as it is
// typed. The page works without it: its forms post and redirect, and a
// form's "Check the spec" button previews on the server.
(function () {
	"use strict";

	// Refresh: every data-refresh milliseconds, the page is fetched again
	// and its #live part replaced, unless the tab is hidden, or the user
	// is on a control in it or has ticked a row.
	var every = Number(document.body.dataset.refresh);
	if (every > 0 && document.getElementById("live")) {
		var busy = false;
		setInterval(function () {
			var live = document.getElementById("live");
			var focus = document.activeElement;
			if (busy || document.hidden || !live || (focus && focus !== document.body && live.contains(focus)) ||
				live.querySelector("input[type=checkbox]:checked")) {
				return;
			}
			busy = true;
			fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
				.then(function (res) { return res.ok ? res.text() : null; })
				.then(function (html) {
					if (html === null) {
						return;
					}
					var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
					if (fresh) {
						live.replaceWith(document.importNode(fresh, true));
					}
				})
				.catch(function () {})
				.finally(function () { busy = false; });
		}, every);
	}

	// Preview: the server checks the spec and zone as they are typed, and
	// says what they mean and when the next runs are.
	var spec = document.getElementById("spec");
	var zone = document.getElementById("zone");
	var out = document.getElementById("preview");
	var cals = document.getElementById("calendars");
	if (spec && zone && out) {
		var timer = 0, asked = 0;
		var ask = function () {
			clearTimeout(timer);
			timer = setTimeout(function () {
				var n = ++asked;
				var q = new URLSearchParams({ spec: spec.value, zone: zone.value, calendars: cals ? cals.value : "" });
				fetch("api/preview?" + q.toString(), { credentials: "same-origin" })
					.then(function (res) { return res.json(); })
					.then(function (p) {
						if (n === asked) {
							show(p);
						}
					})
					.catch(function () {});
			}, 250);
		};
		var show = function (p) {
			out.textContent = "";
			spec.removeAttribute("aria-invalid");
			zone.removeAttribute("aria-invalid");
			if (cals) {
				cals.removeAttribute("aria-invalid");
			}
			var line = document.createElement("p");
			if (p.error) {
				line.className = "error";
				line.textContent = p.error;
				out.appendChild(line);
				(p.field === "zone" ? zone : p.field === "calendars" && cals ? cals : spec).setAttribute("aria-invalid", "true");
				return;
			}
			var words = document.createElement("span");
			words.className = "words";
			words.textContent = p.description;
			line.appendChild(words);
			line.appendChild(document.createTextNode(". Next runs:"));
			out.appendChild(line);
			var list = document.createElement("ol");
			list.className = "upcoming";
			p.next.forEach(function (t, i) {
				var li = document.createElement("li");
				var el = document.createElement("time");
				el.dateTime = t;
				el.textContent = p.nextText[i];
				li.appendChild(el);
				list.appendChild(li);
			});
			out.appendChild(list);
		};
		spec.addEventListener("input", ask);
		zone.addEventListener("input", ask);
		if (cals) {
			cals.addEventListener("input", ask);
		}
	}

	// A form with data-confirm asks first.
	document.querySelectorAll("form[data-confirm]").forEach(function (f) {
		f.addEventListener("submit", function (e) {
			if (!window.confirm(f.dataset.confirm)) {
				e.preventDefault();
			}
		});
	});
})();
