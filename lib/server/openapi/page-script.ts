/**
 * The script of the API reference page, served as a file of its own (`/v2/docs/assets/docs-page.js`) so that the
 * page's content security policy allows no inline script. It fetches the page's document (asking for a restricted
 * API's key when the server answers 403, and sending it with every request from then on) and starts Swagger UI on
 * it, with "Try it out" on and requests going to this same server.
 */
export const PAGE_SCRIPT = `'use strict';
(function () {
  var root = document.getElementById('docs');
  var documentUrl = root.getAttribute('data-document');
  var keys = {};

  function show(message) {
    var p = document.createElement('p');
    p.className = 'docs-message';
    p.textContent = message;
    root.appendChild(p);
  }

  function askKey(header) {
    var form = document.createElement('form');
    var label = document.createElement('label');
    label.textContent = 'This API is restricted: the value of header ' + header + ' ';
    var input = document.createElement('input');
    input.type = 'password';
    input.name = header;
    var button = document.createElement('button');
    button.type = 'submit';
    button.textContent = 'Load';
    label.appendChild(input);
    form.appendChild(label);
    form.appendChild(button);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      keys[header] = input.value;
      root.removeChild(form);
      load();
    });
    root.appendChild(form);
  }

  function start(spec) {
    var ui = SwaggerUIBundle({
      spec: spec,
      domNode: root,
      presets: [SwaggerUIBundle.presets.apis],
      layout: 'BaseLayout',
      deepLinking: true,
      tryItOutEnabled: true,
      displayRequestDuration: true,
      validatorUrl: null,
      requestInterceptor: function (request) {
        Object.keys(keys).forEach(function (header) {
          if (!(header in request.headers)) request.headers[header] = keys[header];
        });
        return request;
      }
    });
    var schemes = (spec.components && spec.components.securitySchemes) || {};
    Object.keys(schemes).forEach(function (name) {
      var value = keys[schemes[name].name];
      if (value !== undefined) ui.preauthorizeApiKey(name, value);
    });
  }

  function load() {
    fetch(documentUrl, { headers: keys }).then(function (response) {
      return response.json().then(function (body) {
        if (response.ok) return start(body);
        var header = response.status === 403 && /expecting header '([^']+)'/.exec(body.error || '');
        if (header) return askKey(header[1]);
        show(documentUrl + ': ' + response.status + ' ' + (body.error || ''));
      });
    }).catch(function (err) {
      show(documentUrl + ': ' + err);
    });
  }

  load();
})();
`;
