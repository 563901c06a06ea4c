/** The admin UI's only stylesheet, served at /ui/static/admin.css. */
export const ADMIN_CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;background:#f5f6f8}
nav{display:flex;gap:14px;align-items:center;padding:10px 20px;background:#1f2a44;color:#fff}
nav a{color:#cdd6ea;text-decoration:none}nav a.active,nav a:hover{color:#fff;text-decoration:underline}
nav .brand{font-weight:700;color:#fff;margin-right:12px}nav .menu-group{color:#8f9bb8;font-size:12px;text-transform:uppercase}
nav .spacer{flex:1}nav .who{color:#cdd6ea}
main{max-width:1200px;margin:0 auto;padding:16px 20px 60px}
h1{font-size:22px;margin:8px 0 16px}h2{font-size:17px;margin:22px 0 8px}fieldset.custom-fields{border:0;padding:0;margin:0}fieldset.custom-fields legend{font-size:17px;font-weight:600;padding:0;margin:22px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e8}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e6e9ef;vertical-align:top}
th{background:#eef1f6;font-weight:600}
table.kv th{width:220px}table.kv td[data-field]{white-space:pre-line}
pre{background:#0f1522;color:#e3e8f3;padding:10px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-all;margin:0}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;color:#fff}
.badge-cyan{background:#0e8fa8}.badge-purple{background:#7048c8}.badge-blue{background:#2d6fd6}.badge-green{background:#2e8b45}
.badge-red{background:#c83737}.badge-orange{background:#d9760f}.badge-gray{background:#7a8190}.badge-yellow{background:#b99300}
.flash{padding:8px 12px;margin:0 0 12px;border-radius:4px}.flash-success{background:#dff3e4}.flash-error{background:#fbe1e1}.flash-info{background:#e2ecfb}
form.inline{display:inline;margin:0}
button,.button{display:inline-block;padding:5px 12px;border:1px solid #2d6fd6;background:#2d6fd6;color:#fff;border-radius:4px;cursor:pointer;text-decoration:none;font:inherit}
button.danger,.button.danger{background:#c83737;border-color:#c83737}button.secondary,.button.secondary{background:#fff;color:#2d6fd6}
button.link{background:none;border:none;color:#cdd6ea;padding:0;text-decoration:underline}
.actions{display:flex;gap:8px;margin:10px 0 16px}
.field{margin:0 0 12px}.field label{display:block;font-weight:600;margin-bottom:3px}
.field input[type=text],.field input[type=password],.field input[type=number],.field select,.field textarea{width:100%;max-width:760px;padding:5px 7px;border:1px solid #c5cbd6;border-radius:4px;font:inherit}
.field textarea{font-family:ui-monospace,Menlo,Consolas,monospace;min-height:90px}
.field .help{color:#667085;font-size:12px}
.field.has-error input,.field.has-error textarea,.field.has-error select{border-color:#c83737}
.errors{color:#b42318;margin:3px 0 0;padding-left:18px}
.tabs{display:flex;gap:4px;border-bottom:1px solid #c5cbd6;margin:6px 0 14px}
.tabs a{padding:6px 12px;text-decoration:none;color:#2d6fd6;border:1px solid transparent;border-bottom:none}
.tabs a.active{border-color:#c5cbd6;background:#fff;color:#1d2330;border-radius:4px 4px 0 0}
.muted{color:#667085}.count a{font-weight:600}
.attempt{background:#fff;border:1px solid #dde1e8;padding:10px;margin:0 0 12px}
.field label.inline-check{display:inline;font-weight:normal;margin-right:14px}
.login{max-width:460px;background:#fff;border:1px solid #dde1e8;padding:18px}
.menu{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:baseline;margin:0 0 12px;font-size:13px}.menu .menu-group{font-weight:700;color:#475467;margin-left:8px}.menu a.active{font-weight:700}
.filters{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;background:#fff;border:1px solid #dde1e8;padding:8px 10px;margin:0 0 12px}.filters input,.filters select{padding:3px 6px;border:1px solid #c5cbd6;border-radius:4px;font:inherit}
.panels{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px}
.yes{color:#2e8b45}.no{color:#c83737}.swatch{font-family:ui-monospace,Menlo,Consolas,monospace}
.diff{margin:0;padding-left:16px}.diff del{color:#b42318}.diff ins{color:#2e8b45;text-decoration:none}
.change-columns{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}.change-data td{word-break:break-word}
.change-data tr.changed th,.change-data tr.changed td{background:#fff4e5}.change-data del{color:#b42318}.change-data ins{color:#2e8b45;text-decoration:none}
details.columns{margin:12px 0}.pager a{margin:0 3px}
`;
