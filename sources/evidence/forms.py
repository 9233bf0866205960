"""The ``forms`` family: procedural form pages and one field-value question each (the
FUNSD task made verifiable).

A page is a vector layout in unit pixels (a letter page at 150 dpi, 1275 x 1650, by
default): a title block, then sections of fields in six layouts, each field's label and
value drawn in fonts that ship with matplotlib, so every text's box is known exactly from
the font's metrics:

- ``lines``: labelled lines "Label: value" with the value on a fill-in rule (at a tab
  stop or right after its label);
- ``grid``: boxed cells, the label small in the top-left corner (wrapped over two lines
  when long: a compound label), the value inside;
- ``two_column``: two columns of labelled lines;
- ``checkbox``: a row of options with check boxes; the value is the checked option's
  text;
- ``multiline``: an address over two or three lines (the value is the lines joined by a
  space);
- ``table``: a two-column table (a description and an amount per row, sometimes a
  total).

The print is small: values have a cap height of 6.5-9 unit px, so at the default view (the
page fitted into 768 px, scale ~0.47) they are 3-4.2 px tall and not legible, while a zoom
onto the field (up to ``max_scale``) makes them legible. The question names one field by
its label (labels are unique on a page); the answer is its value exactly as drawn. The
unit's ``spec`` is what the renderer draws (texts with their font, size, baseline origin
and box; rules, cell borders, fills and check boxes) plus the fields; ``meta`` holds the
asked field, its layout, the other values on the page as distractors and the page's
entities in FUNSD form, so :func:`vicogym.programs.evidence.forms.pair_fields` re-derives
the answer from the same records a real FUNSD page has.

Text boxes are measured with PIL's FreeType bindings on the font files themselves (this
module locates matplotlib's font folder without importing matplotlib): horizontally the
advance and the ink, vertically the extent of the font's tallest and deepest ASCII
glyphs, so every line of a font has the same box height and the ink always lies inside.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vicogym.legibility import legible_px
from vicogym.programs.evidence.forms import field_label
from vicogym.structures.evidence import Evidence, Task, Unit
from vicogym.validation import did_you_mean, is_int, is_number, pick

#: the fonts a page may use (matplotlib ships them) and their bold faces for headings
FONTS = ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "STIXGeneral.ttf")
BOLD = {"DejaVuSans.ttf": "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf": "DejaVuSerif-Bold.ttf",
        "DejaVuSansMono.ttf": "DejaVuSansMono-Bold.ttf", "STIXGeneral.ttf": "STIXGeneralBol.ttf"}
LAYOUTS = ("lines", "grid", "two_column", "checkbox", "multiline", "table")

DEFAULTS: dict[str, Any] = {
    #: page width and height in unit pixels (letter at 150 dpi)
    "page": [1275, 1650],
    #: the values' cap height range in unit pixels (one per page)
    "value_cap": [6.5, 9.0],
    #: the cap height range of the small labels in grid cells' corners
    "small_cap": [4.5, 6.0],
    #: how many sections of fields a page has at most (fewer when the page is full)
    "sections": [3, 7],
    #: the layouts sections are drawn from, and the fonts a page draws its labels and values in
    "layouts": list(LAYOUTS),
    "fonts": list(FONTS),
    #: how far a view may enlarge the page
    "max_scale": 4.0,
    #: the scale of the page's thumbnail, the task's start (a 51 x 66 px page): small
    #: enough that the start hides the value (values' cap heights 0.25-0.35 view px); a
    #: drawn task whose start does not hide its answer is drawn again
    #: (``EvidenceEnv.hidden_report``)
    "start_scale": 0.04,
}
EXTRAS: tuple[str, ...] = ()
#: the family promises a start that hides the answer: a task whose start is not measured
#: to hide it is drawn again
HIDES = True

#: the ASCII glyphs whose extent sets a line's box: the tallest and the deepest
REFERENCE = "Hbdfhklt|()[]{}$/gjpqy@"
MARGIN = 90
INK = ((20, 20, 20), (24, 38, 110), (10, 10, 10), (40, 40, 60))
LABEL_INK = (20, 20, 20)

# ------------------------------------------------------------------ fonts and metrics


@lru_cache(maxsize=1)
def font_dir() -> str:
    """matplotlib's folder of TrueType fonts, found without importing matplotlib."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError("the forms family measures text with matplotlib's fonts; install matplotlib")
    return os.path.join(os.path.dirname(spec.origin), "mpl-data", "fonts", "ttf")


def font_file(name: str) -> str:
    path = os.path.join(font_dir(), name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"matplotlib ships no font {name!r} at {path}")
    return path


@lru_cache(maxsize=64)
def _face(name: str, px: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(font_file(name), px)


@lru_cache(maxsize=16)
def cap_ratio(name: str) -> float:
    """The cap height of ``name`` per pixel of font size (the ink height of 'H')."""
    return -_face(name, 1000).getbbox("H", anchor="ls")[1] / 1000.0


@lru_cache(maxsize=128)
def line_extent(name: str, px: int) -> tuple[float, float]:
    """How far the font's tallest and deepest ASCII glyphs reach above and below the
    baseline, in pixels at size ``px``."""
    _, top, _, bottom = _face(name, px).getbbox(REFERENCE, anchor="ls")
    return float(-top), float(bottom)


@lru_cache(maxsize=8192)
def measure(name: str, px: int, text: str) -> tuple[float, float, float]:
    """``text``'s advance and its ink's left and right ends (pixels from the origin)."""
    face = _face(name, px)
    left, _, right, _ = face.getbbox(text, anchor="ls")
    return float(face.getlength(text)), float(left), float(right)


def pads(px: int) -> tuple[float, float]:
    """The margins a text box keeps around the measured glyphs (horizontal, vertical)."""
    return max(1.0, 0.05 * px), max(1.0, 0.04 * px)


def text_box(name: str, px: int, text: str, x: float, y: float) -> list[float]:
    """The box of ``text`` drawn with its baseline origin at (``x``, ``y``)."""
    advance, left, right = measure(name, px, text)
    up, down = line_extent(name, px)
    ph, pv = pads(px)
    return [x + min(0.0, left) - ph, y - up - pv, x + max(advance, right) + ph, y + down + pv]


def ink_box(text: Mapping[str, Any]) -> list[float]:
    """The box of a placed text's glyphs themselves (its ``box`` keeps a margin around
    the font's tallest and deepest glyphs)."""
    left, top, right, bottom = _face(text["font"], text["px"]).getbbox(text["text"], anchor="ls")
    return [text["x"] + left, text["y"] + top, text["x"] + right, text["y"] + bottom]


def box_height(name: str, px: int) -> float:
    up, down = line_extent(name, px)
    return up + down + 2 * pads(px)[1]


def px_for_cap(name: str, cap: float, low: float, high: float) -> int:
    """The whole font size whose cap height is nearest ``cap`` within [low, high]."""
    ratio = cap_ratio(name)
    lo, hi = math.ceil(low / ratio - 1e-9), max(math.ceil(low / ratio - 1e-9), math.floor(high / ratio + 1e-9))
    return int(min(max(round(cap / ratio), lo), hi))


# ------------------------------------------------------------------ values

FIRST = ("James", "Maria", "Robert", "Linda", "Michael", "Susan", "David", "Karen", "Daniel", "Nancy", "Thomas",
         "Lisa", "Kevin", "Angela", "Brian", "Helen", "Steven", "Laura", "Edward", "Sandra", "Anthony", "Rachel",
         "Gregory", "Diane", "Raymond", "Paula", "Victor", "Irene", "Samuel", "Joyce", "Harold", "Gloria", "Peter",
         "Monica", "Walter", "Teresa", "Aaron", "Yolanda", "Keith", "Carmen")
LAST = ("Johnson", "Alvarez", "Nguyen", "Patel", "Okafor", "Schneider", "Kowalski", "Brennan", "Delgado",
        "Whitfield", "Harrington", "Lindqvist", "Morales", "Chen", "Abernathy", "Fitzgerald", "Castellano",
        "Yamamoto", "Petrov", "Osei", "Gallagher", "Rasmussen", "Dubois", "Haddad", "Moreau", "Novak", "Sullivan",
        "Takahashi", "Iverson", "Mendoza", "Larsen", "Kaminski", "Oyelaran", "Becker", "Romano", "Quinlan",
        "Vasquez", "Holloway", "Brandt", "Ferreira")
COMPANY_A = ("Northwind", "Bluegate", "Cedar Ridge", "Summit", "Harbor", "Ironwood", "Pinecrest", "Silverline",
             "Redstone", "Lakeshore", "Granite", "Westfield", "Eastbrook", "Brightwater", "Oakmont", "Riverbend",
             "Stonebridge", "Clearview", "Maplewood", "Highland")
COMPANY_B = ("Logistics", "Supply", "Analytics", "Holdings", "Manufacturing", "Health Partners", "Foods",
             "Engineering", "Realty", "Insurance", "Electric", "Textiles", "Systems", "Freight", "Pharmaceuticals",
             "Consulting", "Industries", "Capital", "Builders", "Labs")
COMPANY_C = ("Inc.", "LLC", "Co.", "Corp.", "Group", "Ltd.")
STREETS = ("Maple", "Oak", "Cedar", "Elm", "Washington", "Lake", "Hill", "Park", "Pine", "Main", "Highland", "Sunset",
           "Ridge", "Willow", "Franklin", "Lincoln", "Church", "River", "Spring", "Chestnut")
STREET_KINDS = ("Ave", "St", "Rd", "Blvd", "Dr", "Ln", "Way", "Ct", "Pkwy")
#: city, state and the first three digits of its ZIP codes
CITIES = (("Springfield", "IL", "627"), ("Madison", "WI", "537"), ("Dayton", "OH", "454"), ("Albany", "NY", "122"),
          ("Tucson", "AZ", "857"), ("Boise", "ID", "837"), ("Raleigh", "NC", "276"), ("Eugene", "OR", "974"),
          ("Fresno", "CA", "937"), ("Austin", "TX", "787"), ("Tampa", "FL", "336"), ("Omaha", "NE", "681"),
          ("Reno", "NV", "895"), ("Richmond", "VA", "232"), ("Savannah", "GA", "314"), ("Lansing", "MI", "489"),
          ("Spokane", "WA", "992"), ("Trenton", "NJ", "086"), ("Provo", "UT", "846"), ("Duluth", "MN", "558"))
DEPARTMENTS = ("Accounting", "Human Resources", "Operations", "Marketing", "Engineering", "Procurement",
               "Customer Service", "Legal", "Facilities", "Research", "Sales", "Quality Assurance", "Logistics",
               "Finance", "IT Support")
JOBS = ("Account Manager", "Senior Analyst", "Warehouse Supervisor", "Registered Nurse", "Project Coordinator",
        "Field Technician", "Office Administrator", "Software Engineer", "Claims Adjuster", "Sales Representative",
        "Payroll Specialist", "Maintenance Lead", "Buyer", "Controller", "Dispatcher")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DATE_STYLES = ("mdy", "iso", "long", "dmy", "short")
PHONE_STYLES = ("paren", "dash", "dot")


def _digits(rng: np.random.Generator, pattern: str) -> str:
    """``pattern`` with each ``#`` a digit and each ``@`` a capital letter."""
    out = []
    for ch in pattern:
        if ch == "#":
            out.append(str(int(rng.integers(10))))
        elif ch == "@":
            out.append(chr(ord("A") + int(rng.integers(26))))
        else:
            out.append(ch)
    return "".join(out)


def _date(rng: np.random.Generator, style: str, years: tuple[int, int]) -> str:
    y, m, d = int(rng.integers(years[0], years[1] + 1)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
    if style == "mdy":
        return f"{m:02d}/{d:02d}/{y}"
    if style == "iso":
        return f"{y}-{m:02d}-{d:02d}"
    if style == "long":
        return f"{MONTHS[m - 1]} {d}, {y}"
    if style == "dmy":
        return f"{d} {MONTHS[m - 1][:3]} {y}"
    return f"{m}/{d}/{y % 100:02d}"


def _money(rng: np.random.Generator, low: float, high: float, dollar: bool = True) -> str:
    value = math.exp(rng.uniform(math.log(low), math.log(high)))
    return ("$" if dollar else "") + f"{value:,.2f}"


def _value(kind: str, rng: np.random.Generator, style: Mapping[str, Any]) -> str:
    """A realistic value of ``kind`` (what a field of that kind is filled in with)."""
    if kind == "name":
        first, last = pick(rng, FIRST), pick(rng, LAST)
        form = int(rng.integers(3))
        return f"{first} {last}" if form == 0 else f"{first} {chr(65 + int(rng.integers(26)))}. {last}" \
            if form == 1 else f"{last}, {first}"
    if kind in ("date", "dob"):
        return _date(rng, style["date"], (1942, 2004) if kind == "dob" else (2016, 2025))
    if kind == "phone":
        a, b, c = _digits(rng, "###"), _digits(rng, "###"), _digits(rng, "####")
        a = str(2 + int(rng.integers(8))) + a[1:]
        return {"paren": f"({a}) {b}-{c}", "dash": f"{a}-{b}-{c}", "dot": f"{a}.{b}.{c}"}[style["phone"]]
    if kind == "email":
        first, last = pick(rng, FIRST).lower(), pick(rng, LAST).lower()
        domain = pick(rng, COMPANY_A).lower().replace(" ", "") + pick(rng, (".com", ".net", ".org", ".us"))
        return f"{first[0]}{last}@{domain}" if rng.random() < 0.5 else f"{first}.{last}@{domain}"
    if kind == "company":
        return f"{pick(rng, COMPANY_A)} {pick(rng, COMPANY_B)} {pick(rng, COMPANY_C)}"
    if kind == "dept":
        return pick(rng, DEPARTMENTS)
    if kind == "job":
        return pick(rng, JOBS)
    if kind.startswith("id:"):
        return _digits(rng, kind[3:])
    if kind.startswith("money:"):
        low, high = (float(v) for v in kind[6:].split("-"))
        return _money(rng, low, high, style["dollar"])
    if kind == "count":
        return str(int(rng.integers(1, 250)))
    if kind == "small":
        return str(int(rng.integers(0, 7)))
    if kind == "percent":
        return f"{rng.integers(1, 60) / 2:.1f}%"
    if kind == "hours":
        return str(int(pick(rng, (16, 20, 24, 30, 32, 35, 37.5, 40, 45))))
    if kind == "time":
        return f"{int(rng.integers(1, 13))}:{int(rng.integers(0, 12)) * 5:02d} {pick(rng, ('AM', 'PM'))}"
    if kind == "city":
        return pick(rng, CITIES)[0]
    if kind == "state":
        return pick(rng, CITIES)[1]
    if kind == "zip":
        return pick(rng, CITIES)[2] + _digits(rng, "##")
    raise ValueError(f"no value kind {kind!r}")


def _address(rng: np.random.Generator) -> list[str]:
    street = f"{int(rng.integers(12, 9900))} {pick(rng, STREETS)} {pick(rng, STREET_KINDS)}"
    city, state, zip3 = pick(rng, CITIES)
    lines = [street]
    if rng.random() < 0.4:
        lines.append(pick(rng, ("Suite", "Apt", "Unit", "Floor")) + f" {int(rng.integers(2, 40))}"
                     + (pick(rng, ("", "A", "B", "C")) if rng.random() < 0.5 else ""))
    lines.append(f"{city}, {state} {zip3}{_digits(rng, '##')}")
    return lines


#: single-line fields: label -> value kind
LINE_FIELDS: tuple[tuple[str, str], ...] = (
    ("Full name", "name"), ("Applicant name", "name"), ("Employee name", "name"), ("Contact person", "name"),
    ("Supervisor", "name"), ("Emergency contact", "name"), ("Insured name", "name"), ("Prepared by", "name"),
    ("Approved by", "name"), ("Beneficiary", "name"), ("Date of birth", "dob"), ("Date of hire", "date"),
    ("Start date", "date"), ("Invoice date", "date"), ("Due date", "date"), ("Date of loss", "date"),
    ("Effective date", "date"), ("Expiration date", "date"), ("Date signed", "date"), ("Order date", "date"),
    ("Phone", "phone"), ("Home phone", "phone"), ("Work phone", "phone"), ("Mobile", "phone"), ("Fax", "phone"),
    ("Email", "email"), ("Company", "company"), ("Employer", "company"), ("Vendor", "company"),
    ("Carrier", "company"), ("Department", "dept"), ("Job title", "job"), ("Position applied for", "job"),
    ("Employee ID", "id:EMP-#####"), ("Invoice number", "id:INV-######"), ("Policy number", "id:@@#######"),
    ("Claim number", "id:CLM-####-####"), ("Account number", "id:#### #### ####"), ("Tax ID", "id:##-#######"),
    ("Purchase order no.", "id:PO-#####"), ("Vendor number", "id:V######"), ("Reference no.", "id:REF-@####"),
    ("Group number", "id:G-#####"), ("Member ID", "id:@@@#########"), ("Driver license no.", "id:@#######"),
    ("Vehicle plate", "id:###-@@@"), ("Case number", "id:##-@@-#####"), ("Amount due", "money:40-9000"),
    ("Total amount", "money:100-60000"), ("Annual salary", "money:28000-180000"), ("Hourly rate", "money:12-95"),
    ("Deductible", "money:250-5000"), ("Credit limit", "money:500-50000"), ("Quantity", "count"),
    ("Number of dependents", "small"), ("Discount", "percent"), ("Tax rate", "percent"), ("City", "city"),
    ("State", "state"), ("ZIP code", "zip"), ("Branch office", "city"), ("Time of incident", "time"),
    ("Hours per week", "hours"),
)
#: check-box groups: label -> options
CHOICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Payment method", ("Check", "Credit card", "Wire transfer", "Cash")),
    ("Marital status", ("Single", "Married", "Divorced", "Widowed")),
    ("Employment type", ("Full-time", "Part-time", "Contract", "Temporary")),
    ("Shipping method", ("Ground", "2-day air", "Overnight", "Freight")),
    ("Account type", ("Checking", "Savings", "Money market")),
    ("Preferred contact", ("Phone", "Email", "Mail", "Text message")),
    ("Coverage level", ("Employee only", "Employee + spouse", "Family")),
    ("Residence status", ("Own", "Rent", "Live with family", "Other")),
    ("Claim type", ("Auto", "Property", "Liability", "Medical")),
    ("Pay frequency", ("Weekly", "Biweekly", "Semimonthly", "Monthly")),
    ("Citizenship", ("U.S. citizen", "Permanent resident", "Visa holder")),
    ("Request type", ("New", "Renewal", "Change", "Cancellation")),
)
ADDRESS_LABELS = ("Mailing address", "Billing address", "Shipping address", "Home address", "Remit to", "Ship to",
                  "Previous address", "Business address", "Property address", "Bill to")
CHARGES = ("Freight", "Handling fee", "Insurance", "Sales tax", "Labor", "Parts", "Consulting fees",
           "Travel expenses", "Equipment rental", "Late fee", "Service charge", "Deposit", "Shipping", "Materials",
           "Permit fee", "Storage", "Installation", "Inspection", "Disposal fee", "Training")
TABLE_HEADS = (("Description", "Amount"), ("Item", "Cost"), ("Charge", "Amount (USD)"), ("Service", "Fee"))
TITLES = ("EMPLOYEE ENROLLMENT FORM", "VENDOR REGISTRATION", "CLAIM FORM", "PURCHASE ORDER", "CREDIT APPLICATION",
          "RENTAL APPLICATION", "PATIENT INTAKE FORM", "CHANGE OF ADDRESS REQUEST", "EXPENSE REPORT",
          "NEW ACCOUNT APPLICATION", "SERVICE REQUEST", "INCIDENT REPORT", "BENEFITS ELECTION FORM")
SECTIONS = ("Applicant information", "Employment details", "Contact information", "Payment details", "Billing",
            "Shipping", "Insurance coverage", "Vehicle information", "Account details", "Emergency contact",
            "Charges", "Authorization", "Personal data", "Order details", "Office use only", "Addresses",
            "Preferences", "Policy information")
QUESTIONS = ("What is the value of the field '{label}'?", "What is filled in for '{label}' on this form?",
             "What does the form give as '{label}'?", "Read the form: what is entered in the '{label}' field?")
CHOICE_QUESTIONS = ("Which option is checked for '{label}'?", "What is marked for '{label}' on this form?")
TABLE_QUESTIONS = ("What amount is listed for '{label}'?", "What is the value of the row '{label}' in the table?")

# ------------------------------------------------------------------ the page


class _Page:
    """A page being laid out: texts, rules, borders, fills, check boxes and fields."""

    def __init__(self, width: int, height: int, style: Mapping[str, Any], rng: np.random.Generator):
        self.width, self.height, self.style, self.rng = width, height, style, rng
        self.left, self.right = MARGIN, width - MARGIN
        self.bottom = height - MARGIN - 40
        self.texts: list[dict[str, Any]] = []
        self.lines: list[list[float]] = []
        self.fills: list[list[float]] = []
        self.boxes: list[dict[str, Any]] = []
        self.fields: list[dict[str, Any]] = []
        self.used: set[str] = set()
        self.headings: set[str] = set()

    # state, so a section that does not fit is taken back
    def mark(self) -> tuple[int, ...]:
        return (len(self.texts), len(self.lines), len(self.fills), len(self.boxes), len(self.fields))

    def rollback(self, mark: tuple[int, ...]) -> None:
        for f in self.fields[mark[4]:]:
            self.used.discard(field_label(f["label"]).lower())
        self.texts, self.lines = self.texts[:mark[0]], self.lines[:mark[1]]
        self.fills, self.boxes, self.fields = self.fills[:mark[2]], self.boxes[:mark[3]], self.fields[:mark[4]]

    def text(self, text: str, font: str, px: int, x: float, y: float, role: str, color: Sequence[int] = LABEL_INK,
             align: str = "left") -> dict[str, Any]:
        """Place ``text`` with its baseline at ``y``, starting at ``x`` (or ending there
        when ``align="right"``)."""
        advance = measure(font, px, text)[0]
        if align == "right":
            x -= advance
        item = {"id": len(self.texts), "text": text, "font": font, "px": int(px), "x": round(x, 2), "y": round(y, 2),
                "w": round(advance, 3), "box": [round(v, 2) for v in text_box(font, px, text, x, y)], "role": role,
                "color": list(color)}
        self.texts.append(item)
        return item

    def line(self, x0: float, y0: float, x1: float, y1: float, width: float = 1.0, gray: int = 60) -> None:
        self.lines.append([round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2), float(width), int(gray)])

    def rect(self, x0: float, y0: float, x1: float, y1: float, width: float = 1.0, gray: int = 60) -> None:
        for a in ((x0, y0, x1, y0), (x1, y0, x1, y1), (x0, y1, x1, y1), (x0, y0, x0, y1)):
            self.line(*a, width=width, gray=gray)

    def fill(self, x0: float, y0: float, x1: float, y1: float, gray: int) -> None:
        self.fills.append([round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2), int(gray)])

    def free(self, label: str) -> bool:
        return field_label(label).lower() not in self.used

    def field(self, layout: str, labels: Sequence[dict[str, Any]], values: Sequence[dict[str, Any]],
              evidence_box: Sequence[float] | None = None, options: Sequence[str] = (),
              choices: Sequence[tuple[int, int]] = ()) -> None:
        label = field_label(" ".join(t["text"] for t in labels))
        self.used.add(label.lower())
        fid = len(self.fields)
        for t in (*labels, *values):
            t["field"] = fid
        value_box = _union([t["box"] for t in values])
        self.fields.append({
            "id": fid, "layout": layout, "label": label, "value": " ".join(t["text"] for t in values),
            "label_ids": [t["id"] for t in labels], "value_ids": [t["id"] for t in values],
            "label_box": _union([t["box"] for t in labels]), "value_box": value_box,
            "evidence_box": [round(v, 2) for v in (evidence_box or value_box)],
            "label_cap": round(min(t["px"] * cap_ratio(t["font"]) for t in labels), 4),
            "value_cap": round(min(t["px"] * cap_ratio(t["font"]) for t in values), 4),
            "options": list(options), **({"choices": [list(c) for c in choices]} if choices else {})})

    def single(self, rng: np.random.Generator) -> tuple[str, str] | None:
        """A free single-line field label and a value for it."""
        free = [f for f in LINE_FIELDS if self.free(f[0])]
        if not free:
            return None
        label, kind = pick(rng, free)
        return label, _value(kind, rng, self.style)


def _union(boxes: Sequence[Sequence[float]]) -> list[float]:
    return [round(min(b[0] for b in boxes), 2), round(min(b[1] for b in boxes), 2),
            round(max(b[2] for b in boxes), 2), round(max(b[3] for b in boxes), 2)]


def _fits(font: str, px: int, text: str, width: float) -> bool:
    return measure(font, px, text)[0] + 2 * pads(px)[0] <= width


def _colon(page: _Page, label: str) -> str:
    return label + ":" if page.style["colon"] else label


def _title(page: _Page, rng: np.random.Generator) -> float:
    s = page.style
    head = BOLD[s["label_font"]]
    px = px_for_cap(head, float(rng.uniform(18, 24)), 16, 26)
    y = MARGIN + line_extent(head, px)[0]
    title = page.text(pick(rng, TITLES), head, px, page.left, y, "title")
    small = s["label_px"]
    code = f"Form {_digits(rng, '@@-###')}  Rev. {int(rng.integers(1, 13)):02d}/{int(rng.integers(2008, 2025))}"
    if measure(s["label_font"], small, code)[0] < page.right - title["box"][2] - 40:
        page.text(code, s["label_font"], small, page.right, y, "other", align="right")
    y += line_extent(head, px)[1] + 14 + line_extent(s["label_font"], small)[0]
    page.text(f"{_value('company', rng, s)}  -  {_address(rng)[-1]}", s["label_font"], small, page.left, y, "other")
    y += line_extent(s["label_font"], small)[1] + 12
    page.line(page.left, y, page.right, y, 2.0, 30)
    y += 18
    if rng.random() < 0.5:
        note = pick(rng, ("Please print clearly in ink.", "Complete all sections. Incomplete forms will be returned.",
                          "Return the completed form to the office listed above.", "Type or print legibly."))
        y += line_extent(s["label_font"], small)[0]
        page.text(note, s["label_font"], small, page.left, y, "other")
        y += line_extent(s["label_font"], small)[1] + 18
    return y


def _heading(page: _Page, rng: np.random.Generator, y: float, number: int) -> float:
    s = page.style
    head = BOLD[s["label_font"]]
    px = s["head_px"]
    up, down = line_extent(head, px)
    name = pick(rng, [n for n in SECTIONS if n not in page.headings] or SECTIONS)
    page.headings.add(name)
    text = f"Section {number}: {name}" if s["numbered"] else name.upper()
    if s["bands"]:
        band = up + down + 14
        page.fill(page.left, y, page.right, y + band, 228)
        page.text(text, head, px, page.left + 8, y + 7 + up, "header")
        return y + band + 16
    page.text(text, head, px, page.left, y + up, "header")
    y += up + down + 5
    page.line(page.left, y, page.right, y, 1.0, 60)
    return y + 16


def _labelled_row(page: _Page, rng: np.random.Generator, layout: str, x0: float, x1: float, y: float,
                  tab: float | None) -> bool:
    """One "Label: value" on a fill-in rule between ``x0`` and ``x1``, baseline ``y``."""
    s = page.style
    for _ in range(6):
        drawn = page.single(rng)
        if drawn is None:
            return False
        label, value = drawn
        label_text = _colon(page, label)
        label_w = measure(s["label_font"], s["label_px"], label_text)[0]
        vx = max(tab or 0.0, x0 + label_w + 0.9 * s["value_px"])
        if _fits(s["value_font"], s["value_px"], value, x1 - vx - 6) and vx < x1 - 40:
            break
    else:
        return False
    lab = page.text(label_text, s["label_font"], s["label_px"], x0, y, "label")
    val = page.text(value, s["value_font"], s["value_px"], vx + 2, y, "value", s["ink"])
    rule_y = max(lab["box"][3], val["box"][3]) + 1.5
    page.line(vx - 2, rule_y, x1, rule_y, 1.0, 90)
    page.field(layout, [lab], [val])
    return True


def _row_pitch(page: _Page) -> float:
    s = page.style
    return max(box_height(s["label_font"], s["label_px"]), box_height(s["value_font"], s["value_px"])) * s["pitch"]


def _lines(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    rows = int(rng.integers(2, 6))
    up = max(line_extent(s["label_font"], s["label_px"])[0], line_extent(s["value_font"], s["value_px"])[0])
    tab = page.left + float(rng.uniform(180, 300)) if s["tab"] else None
    for _ in range(rows):
        if _labelled_row(page, rng, "lines", page.left, page.right, y + up, tab):
            y += _row_pitch(page)
    return y


def _two_column(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    rows = int(rng.integers(2, 5))
    up = max(line_extent(s["label_font"], s["label_px"])[0], line_extent(s["value_font"], s["value_px"])[0])
    mid, gutter = (page.left + page.right) / 2, 50
    for _ in range(rows):
        _labelled_row(page, rng, "two_column", page.left, mid - gutter / 2, y + up, None)
        _labelled_row(page, rng, "two_column", mid + gutter / 2, page.right, y + up, None)
        y += _row_pitch(page)
    return y


def _wrap(words: Sequence[str]) -> list[str]:
    """Two lines of about equal length."""
    best = None
    for k in range(1, len(words)):
        a, b = " ".join(words[:k]), " ".join(words[k:])
        score = max(len(a), len(b))
        if best is None or score < best[0]:
            best = (score, [a, b])
    return best[1] if best else [" ".join(words)]


def _grid(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    lf, lpx, vf, vpx = s["label_font"], s["small_px"], s["value_font"], s["value_px"]
    pad = 7.0
    label_h, value_h = box_height(lf, lpx), box_height(vf, vpx)
    label_up, value_down = line_extent(lf, lpx)[0], line_extent(vf, vpx)[1]
    width = page.right - page.left
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(2, 5))
        weights = rng.uniform(1.0, 2.5, n)
        edges = [page.left + width * float(v) for v in np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])]
        cells = []
        for c in range(n):
            x0, x1 = edges[c], edges[c + 1]
            for _ in range(6):
                drawn = page.single(rng)
                if drawn is None:
                    break
                label, value = drawn
                words = label.split()
                inner = x1 - x0 - 2 * pad
                lines = [label]
                if len(words) > 1 and (not _fits(lf, lpx, label, inner) or rng.random() < 0.3):
                    lines = _wrap(words)
                if all(_fits(lf, lpx, t, inner) for t in lines) and _fits(vf, vpx, value, inner):
                    cells.append((x0, x1, lines, value))
                    page.used.add(label.lower())  # held until the row is drawn
                    break
        if not cells:
            continue
        for _, _, lines, _ in cells:
            page.used.discard(" ".join(lines).lower())
        n_lines = max(len(c[2]) for c in cells)
        height = pad + n_lines * label_h * 1.02 + 6 + value_h + pad
        for x0, x1, lines, value in cells:
            page.rect(x0, y, x1, y + height, 1.5, 50)
            labs = [page.text(t, lf, lpx, x0 + pad, y + pad + label_up + k * label_h * 1.02, "label")
                    for k, t in enumerate(lines)]
            val = page.text(value, vf, vpx, x0 + pad, y + height - pad - value_down - pads(vpx)[1], "value", s["ink"])
            page.field("grid", labs, [val])
        y += height
    return y + 6


def _checkbox(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    lf, lpx = s["label_font"], s["label_px"]
    cap = lpx * cap_ratio(lf)
    up = line_extent(lf, lpx)[0]
    groups = [c for c in CHOICES if page.free(c[0])]
    order = rng.permutation(len(groups))
    for k in order[:int(rng.integers(1, 4))]:
        label, options = groups[int(k)]
        base = y + up
        lab = page.text(_colon(page, label), lf, lpx, page.left, base, "label")
        x = lab["box"][2] + 1.6 * lpx
        side = round(cap * 1.3, 2)
        placed = []
        for option in options:
            need = side + 0.5 * lpx + measure(lf, lpx, option)[0] + 2 * pads(lpx)[0]
            if x + need > page.right:
                break
            square = [x, base - cap * 1.15, x + side, base - cap * 1.15 + side]
            placed.append((option, square))
            x += need + 1.6 * lpx
        if len(placed) < 2:
            page.texts.pop()
            continue
        checked = int(rng.integers(len(placed)))
        items, choices = [], []
        for i, (option, square) in enumerate(placed):
            page.boxes.append({"box": [round(v, 2) for v in square], "checked": i == checked,
                               "width": 1.5, "gray": 30})
            items.append(page.text(option, lf, lpx, square[2] + 0.5 * lpx, base, "value" if i == checked else "option",
                                   LABEL_INK))
            choices.append((items[-1]["id"], len(page.boxes) - 1))
        sq = placed[checked][1]
        val = items[checked]
        page.field("checkbox", [lab], [val], _union([sq, val["box"]]), options=[p[0] for p in placed],
                   choices=choices)
        y += _row_pitch(page) * 1.1
    return y


def _multiline(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    lf, lpx, vf, vpx = s["label_font"], s["label_px"], s["value_font"], s["value_px"]
    columns = 2 if rng.random() < 0.6 else 1
    mid, gutter = (page.left + page.right) / 2, 50
    spans = [(page.left, mid - gutter / 2), (mid + gutter / 2, page.right)] if columns == 2 else \
        [(page.left, page.left + (page.right - page.left) * 0.6)]
    label_up = line_extent(lf, lpx)[0]
    value_up = line_extent(vf, vpx)[0]
    pitch = box_height(vf, vpx) * 1.4
    above = rng.random() < 0.6
    bottom = y
    for x0, x1 in spans:
        free = [a for a in ADDRESS_LABELS if page.free(a)]
        if not free:
            break
        label = pick(rng, free)
        lines = _address(rng)
        lab_text = _colon(page, label)
        lab_w = measure(lf, lpx, lab_text)[0]
        vx = x0 + 10 if above else x0 + lab_w + 0.9 * vpx
        if not all(_fits(vf, vpx, t, x1 - vx - 6) for t in lines):
            continue
        lab = page.text(lab_text, lf, lpx, x0, y + label_up, "label")
        vy = lab["box"][3] + 6 + value_up if above else y + label_up
        vals = []
        for t in lines:
            val = page.text(t, vf, vpx, vx + 2, vy, "value", s["ink"])
            page.line(vx - 2, val["box"][3] + 1.5, x1, val["box"][3] + 1.5, 1.0, 110)
            vals.append(val)
            vy += pitch
        page.field("multiline", [lab], vals)
        bottom = max(bottom, vals[-1]["box"][3] + 6)
    return bottom + 14


def _table(page: _Page, rng: np.random.Generator, y: float) -> float:
    s = page.style
    lf, lpx, vf, vpx = s["label_font"], s["label_px"], s["value_font"], s["value_px"]
    head = BOLD[lf]
    width = (page.right - page.left) * float(rng.uniform(0.5, 0.85))
    x0, x1 = page.left, page.left + width
    split = x0 + width * float(rng.uniform(0.55, 0.7))
    pad = 9.0
    heads = pick(rng, TABLE_HEADS)
    head_h = box_height(head, lpx) + 2 * pad
    page.fill(x0, y, x1, y + head_h, 225)
    up = line_extent(head, lpx)[0]
    page.text(heads[0], head, lpx, x0 + pad, y + pad + pads(lpx)[1] + up, "header")
    page.text(heads[1], head, lpx, x1 - pad - pads(lpx)[0], y + pad + pads(lpx)[1] + up, "header", align="right")
    row_h = max(box_height(lf, lpx), box_height(vf, vpx)) + 2 * pad
    rows = int(rng.integers(3, 7))
    free = [c for c in CHARGES if page.free(c)]
    names = [free[int(i)] for i in rng.permutation(len(free))[:rows]]
    total = rng.random() < 0.5 and page.free("Total")
    cents = [int(round(math.exp(rng.uniform(math.log(800), math.log(250000))))) for _ in names]
    if total:
        names, cents = [*names, "Total"], [*cents, sum(cents)]
    top = y
    y += head_h
    base_up = max(line_extent(lf, lpx)[0], line_extent(vf, vpx)[0])
    for name, c in zip(names, cents):
        amount = ("$" if s["dollar"] else "") + f"{c / 100:,.2f}"
        base = y + pad + base_up + 1
        face = head if name == "Total" else lf
        lab = page.text(name, face, lpx, x0 + pad, base, "label")
        val = page.text(amount, vf, vpx, x1 - pad - pads(vpx)[0], base, "value", s["ink"], align="right")
        page.field("table", [lab], [val])
        y += row_h
        page.line(x0, y, x1, y, 1.0, 120)
    page.rect(x0, top, x1, y, 1.5, 40)
    page.line(split, top, split, y, 1.0, 90)
    return y + 18


SECTION_DRAWERS: Mapping[str, Callable[[_Page, np.random.Generator, float], float]] = {
    "lines": _lines, "grid": _grid, "two_column": _two_column, "checkbox": _checkbox, "multiline": _multiline,
    "table": _table}


def _footer(page: _Page, rng: np.random.Generator) -> None:
    s = page.style
    y = page.height - MARGIN + 10
    page.text("Page 1 of 1", s["label_font"], s["label_px"], page.right, y, "other", align="right")
    page.text(f"{_digits(rng, '@@@-####')} ({int(rng.integers(1, 13))}/{int(rng.integers(10, 25))})",
              s["label_font"], s["label_px"], page.left, y, "other")


def _style(rng: np.random.Generator, settings: Mapping[str, Any]) -> dict[str, Any]:
    fonts = list(settings["fonts"])
    label_font = pick(rng, fonts)
    value_font = label_font if rng.random() < 0.4 else pick(rng, fonts)
    lo, hi = (float(v) for v in settings["value_cap"])
    value_px = px_for_cap(value_font, float(rng.uniform(lo, hi)), lo, hi)
    value_cap = value_px * cap_ratio(value_font)
    label_px = px_for_cap(label_font, value_cap * float(rng.uniform(0.85, 1.05)), lo, hi)
    slo, shi = (float(v) for v in settings["small_cap"])
    small_px = px_for_cap(label_font, float(rng.uniform(slo, shi)), slo, shi)
    head_px = px_for_cap(BOLD[label_font], label_px * cap_ratio(label_font) * 1.1, lo, hi * 1.15)
    return {"label_font": label_font, "value_font": value_font, "label_px": label_px, "value_px": value_px,
            "small_px": small_px, "head_px": head_px, "ink": pick(rng, INK), "date": pick(rng, DATE_STYLES),
            "phone": pick(rng, PHONE_STYLES), "dollar": bool(rng.random() < 0.7), "colon": bool(rng.random() < 0.8),
            "tab": bool(rng.random() < 0.5), "bands": bool(rng.random() < 0.5), "numbered": bool(rng.random() < 0.5),
            "pitch": float(rng.uniform(1.75, 2.2))}


def page_layout(rng: np.random.Generator, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A form page's vector layout (the unit's ``spec``): ``page`` [w, h], ``texts``
    (text, font, px, baseline origin x/y, advance w, box, role, field, color),
    ``lines`` [x0, y0, x1, y1, width, gray], ``fills`` [x0, y0, x1, y1, gray], ``boxes``
    (check boxes: box, checked, width, gray) and ``fields`` (label, value, their text ids
    and boxes, the evidence box, cap heights, layout, options)."""
    width, height = (int(v) for v in settings["page"])
    style = _style(rng, settings)
    page = _Page(width, height, style, rng)
    y = _title(page, rng)
    layouts = list(settings["layouts"])
    lo, hi = (int(v) for v in settings["sections"])
    wanted = int(rng.integers(lo, hi + 1))
    order = [layouts[int(i)] for i in rng.permutation(len(layouts))]
    while len(order) < wanted:
        order += [layouts[int(i)] for i in rng.permutation(len(layouts))]
    for number, layout in enumerate(order[:wanted], 1):
        mark = page.mark()
        end = SECTION_DRAWERS[layout](page, rng, _heading(page, rng, y, number))
        if end > page.bottom or len(page.fields) == mark[4]:
            page.rollback(mark)
            if end > page.bottom:
                break
            continue
        y = end + 22
    _footer(page, rng)
    return {"page": [width, height], "texts": page.texts, "lines": page.lines, "fills": page.fills,
            "boxes": page.boxes, "fields": page.fields, "style": {k: v for k, v in style.items() if k != "ink"}}


ROLE_LABELS = {"label": "question", "value": "answer", "title": "header", "header": "header", "other": "other",
               "option": "other"}


def entities(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The page's texts as FUNSD entities (id, box, text, label, linking, words): labels
    are questions, values answers, titles and headings headers, the rest other; each
    field links every label line to every value line."""
    links: dict[int, list[list[int]]] = {}
    for f in spec["fields"]:
        for q in f["label_ids"]:
            for a in f["value_ids"]:
                links.setdefault(q, []).append([q, a])
                links.setdefault(a, []).append([q, a])
    out = []
    for t in spec["texts"]:
        words, start = [], 0
        for word in t["text"].split(" "):
            if word:
                x0 = t["x"] + measure(t["font"], t["px"], t["text"][:start])[0] if start else t["box"][0]
                x1 = t["x"] + measure(t["font"], t["px"], t["text"][:start + len(word)])[0]
                words.append({"box": [round(x0, 2), t["box"][1], round(x1, 2), t["box"][3]], "text": word})
            start += len(word) + 1
        out.append({"id": t["id"], "box": list(t["box"]), "text": t["text"], "label": ROLE_LABELS[t["role"]],
                    "linking": links.get(t["id"], []), "words": words})
    return out


def check_settings(settings: Mapping[str, Any]) -> None:
    page = settings["page"]
    if not (isinstance(page, (list, tuple)) and len(page) == 2 and all(is_int(v, 400, 8000) for v in page)):
        raise ValueError(f"expected forms setting 'page' as [width, height] whole pixels in [400, 8000], got {page!r}")
    for name, low, high in (("value_cap", 4.0, 40.0), ("small_cap", 4.0, 40.0)):
        v = settings[name]
        if not (isinstance(v, (list, tuple)) and len(v) == 2 and all(is_number(x, low, high) for x in v)
                and v[0] <= v[1]):
            raise ValueError(f"expected forms setting {name!r} as [low, high] cap heights in [{low}, {high}] px, "
                             f"got {v!r}")
    sections = settings["sections"]
    if not (isinstance(sections, (list, tuple)) and len(sections) == 2 and all(is_int(v, 1, 20) for v in sections)
            and sections[0] <= sections[1]):
        raise ValueError(f"expected forms setting 'sections' as [low, high] counts in [1, 20], got {sections!r}")
    for name, known in (("layouts", LAYOUTS), ("fonts", FONTS)):
        v = settings[name]
        if not isinstance(v, (list, tuple)) or not v:
            raise ValueError(f"expected forms setting {name!r} as a non-empty list of {', '.join(known)}, got {v!r}")
        for item in v:
            if item not in known:
                raise ValueError(f"forms setting {name!r} names {item!r}{did_you_mean(item, known)} (known: "
                                 f"{', '.join(known)})")
    if not is_number(settings["max_scale"], 1.0, 16.0):
        raise ValueError(f"expected forms setting 'max_scale' as a number in [1, 16], got {settings['max_scale']!r}")
    if not is_number(settings["start_scale"], 0.005, 4.0):
        raise ValueError(f"expected forms setting 'start_scale' as a number in [0.005, 4], got "
                         f"{settings['start_scale']!r}")


def draw(rng: np.random.Generator, settings: Mapping[str, Any] | None = None) -> Task:
    """One form page and one question about one of its fields."""
    settings = {**DEFAULTS, **(settings or {})}
    check_settings(settings)
    for _ in range(20):
        spec = page_layout(rng, settings)
        if spec["fields"]:
            break
    else:  # pragma: no cover - a page always holds a field at sane settings
        raise ValueError("no form page with a field could be laid out; use a larger 'page' or fewer 'sections'")
    fields = spec["fields"]
    # a layout first, then one of its fields: each layout on the page is asked about as often
    present = list(dict.fromkeys(f["layout"] for f in fields))
    chosen = pick(rng, present)
    asked = pick(rng, [f for f in fields if f["layout"] == chosen])
    layout = asked["layout"]
    templates = CHOICE_QUESTIONS if layout == "checkbox" else TABLE_QUESTIONS if layout == "table" else QUESTIONS
    question = pick(rng, templates).format(label=asked["label"])
    distractors = [o for o in asked["options"] if o != asked["value"]]
    distractors += [f["value"] for f in fields if f["id"] != asked["id"]]
    distractors = list(dict.fromkeys(d for d in distractors if d != asked["value"]))
    width, height = spec["page"]
    unit = Unit("form", width, height, spec, title=spec["texts"][0]["text"].title(),
                max_scale=float(settings["max_scale"]))
    label = asked["label"]
    # each item is legible where Tesseract reads its font (the hardest of its lines' fonts)
    value_px = max(legible_px(spec["texts"][i]["font"]) for i in asked["value_ids"])
    label_px = max(legible_px(spec["texts"][i]["font"]) for i in asked["label_ids"])
    texts = spec["texts"]
    value_ink = [ink_box(texts[i]) for i in asked["value_ids"]]
    if layout == "checkbox":  # the check is part of what must be seen
        value_ink.append(spec["boxes"][dict(map(tuple, asked["choices"]))[asked["value_ids"][0]]]["box"])
    evidence = (
        Evidence(0, tuple(asked["evidence_box"]), asked["value_cap"], value_px, f"the value of '{label}'",
                 tuple(_union(value_ink))),
        Evidence(0, tuple(asked["label_box"]), asked["label_cap"], label_px, f"the label '{label}'",
                 tuple(_union([ink_box(texts[i]) for i in asked["label_ids"]]))))
    digest = hashlib.sha256(json.dumps([spec, asked["id"], question], sort_keys=True).encode()).hexdigest()[:16]
    meta = {"field": asked["id"], "label": asked["label"], "layout": layout, "distractors": distractors,
            "program": "vicogym.programs.evidence.forms.pair_fields", "entities": entities(spec)}
    return Task(f"forms-{digest}", "forms", question, asked["value"], (unit,), evidence, "text", "anls", (), (),
                "first", meta, float(settings["start_scale"]))


# ------------------------------------------------------------------ counterfactuals

#: a single-line field's label -> the kind of value it is filled in with
KINDS: Mapping[str, str] = dict(LINE_FIELDS)
#: how many values are drawn at most in search of ones of the same kind and length
COUNTERFACTUAL_TRIES = 400


def counterfactuals(task: Task, rng: np.random.Generator, n: int = 8) -> list[Task]:
    """Up to ``n`` tasks that differ from ``task`` only in the answer the page gives: the
    asked field's value replaced by another of the same kind and length (a table's amount
    by another with as many digits; an address by another of as many lines, each as long
    as can be found), or the check moved to another option of a check-box group; each
    answer scores 0 against ``task``'s with its scorer. What the hidden check draws the
    start view of (a page that draws the same whichever of these is true hides its answer)."""
    from vicogym.programs.evidence import score_task

    unit = task.units[0]
    spec = unit.spec
    asked = next(f for f in spec["fields"] if f["id"] == task.meta["field"])
    out: list[Task] = []
    for values in _other_values(asked, spec, rng, n):
        changed = _with_values(spec, asked, values)
        new = changed["fields"][asked["id"]]["value"]
        if score_task(task, new) > 0 or any(t.answer == new for t in out):
            continue
        out.append(Task(task.id, task.family, task.question, new,
                        (Unit(unit.kind, unit.width, unit.height, changed, unit.title, unit.max_scale),),
                        task.evidence, task.contract, task.scorer, (), task.options, task.start,
                        {**task.meta, "counterfactual": f"{asked['value']!r} -> {new!r}"}, task.start_scale))
    return out


def _other_values(asked: Mapping[str, Any], spec: Mapping[str, Any], rng: np.random.Generator, n: int
                  ) -> list[list[str] | tuple[str, int]]:
    """Other fillings of ``asked``: a list of value lines, or (a check-box group) another
    option to print beside the check (``("swap", k)``) or to check (``("move", k)``)."""
    if asked["layout"] == "checkbox":
        # the check stays where it is and another option's text is printed beside it (only
        # text changes), then the check moved to another box
        picked = [k for k, (text, _) in enumerate(asked["choices"]) if text not in asked["value_ids"]]
        order = [picked[int(i)] for i in rng.permutation(len(picked))]
        return ([("swap", k) for k in order] + [("move", k) for k in order])[:n]
    old = [spec["texts"][i]["text"] for i in asked["value_ids"]]
    style = spec["style"]
    # each line drawn on its own until one as long as the old line is found (an address's
    # lines: street, suite, city)
    pools: list[list[str]] = [[] for _ in old]
    for _ in range(COUNTERFACTUAL_TRIES):
        if asked["layout"] == "multiline":
            lines = _address(rng)
        elif asked["layout"] == "table":
            lines = [_amount_like(old[0], rng)]
        else:
            lines = [_value(KINDS[asked["label"]], rng, style)]
        if len(lines) != len(old):
            continue
        for pool, line, was in zip(pools, lines, old):
            if len(line) == len(was) and line != was and line not in pool and len(pool) < n:
                pool.append(line)
        if all(len(pool) == n for pool in pools):
            break
    if not all(pools):
        return []
    return [[pool[k % len(pool)] for pool in pools] for k in range(max(len(pool) for pool in pools))]


def _amount_like(text: str, rng: np.random.Generator) -> str:
    """Another amount printed as ``text`` is: as many digits, the same separators."""
    out, first = [], True
    for ch in text:
        if ch.isdigit():
            out.append(str(int(rng.integers(1 if first else 0, 10))))
            first = False
        else:
            out.append(ch)
    return "".join(out)


def _with_values(spec: Mapping[str, Any], asked: Mapping[str, Any], values: list[str] | tuple[str, int]
                 ) -> dict[str, Any]:
    """A copy of the page ``spec`` whose field ``asked`` holds ``values``: its value texts
    set anew at their origins (a right-aligned table amount keeps its right end), or
    another option printed beside its check or checked (:func:`_other_values`)."""
    texts = [dict(t) for t in spec["texts"]]
    fields = [dict(f) for f in spec["fields"]]
    boxes = [dict(b) for b in spec.get("boxes", ())]
    field = fields[asked["id"]]
    if isinstance(values, tuple):
        how, k = values
        (old_text, old_box), (new_text, new_box) = asked["choices"][
            [t for t, _ in asked["choices"]].index(asked["value_ids"][0])], asked["choices"][k]
        if how == "swap":  # the two options' texts trade places, each at the other's origin
            a, b = texts[old_text], texts[new_text]
            for t, text in ((a, b["text"]), (b, a["text"])):
                advance = measure(t["font"], t["px"], text)[0]
                t.update(text=text, w=round(advance, 3),
                         box=[round(v, 2) for v in text_box(t["font"], t["px"], text, t["x"], t["y"])])
            field.update(value=a["text"], value_box=list(a["box"]),
                         evidence_box=_union([boxes[old_box]["box"], a["box"]]))
        else:
            boxes[old_box]["checked"], boxes[new_box]["checked"] = False, True
            texts[old_text]["role"], texts[new_text]["role"] = "option", "value"
            field.update(value=texts[new_text]["text"], value_ids=[new_text], value_box=list(texts[new_text]["box"]),
                         evidence_box=_union([boxes[new_box]["box"], texts[new_text]["box"]]))
    else:
        for i, text in zip(asked["value_ids"], values):
            t = texts[i]
            advance = measure(t["font"], t["px"], text)[0]
            x = t["x"] + t["w"] - advance if asked["layout"] == "table" else t["x"]
            t.update(text=text, x=round(x, 2), w=round(advance, 3),
                     box=[round(v, 2) for v in text_box(t["font"], t["px"], text, x, t["y"])])
        shown = [texts[i] for i in asked["value_ids"]]
        field.update(value=" ".join(values), value_box=_union([t["box"] for t in shown]))
        field["evidence_box"] = list(field["value_box"])
    return {**spec, "texts": texts, "fields": fields, "boxes": boxes}
