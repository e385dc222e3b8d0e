"""Demo data for ``quickstart.py``: a scripted 30-turn trip-planning chat and its tools.

Each turn is a user message, at most one tool call the assistant makes, and the assistant's
answer. The tools are real LangChain tools with deterministic, offline results, so the
demo's ToolNode runs them as it would run any tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import tool

__all__ = ["TOOLS", "TURNS", "Turn"]


@dataclass(frozen=True)
class Turn:
    """One user turn: what the user says, the tool the assistant calls, what it answers."""

    user: str
    answer: str
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def _seed(*parts: object) -> int:
    """A stable number from the arguments (Python's ``hash`` of a str changes per process)."""
    return sum(ord(c) for c in "|".join(map(str, parts)))


@tool
def search_flights(origin: str, destination: str, date: str) -> str:
    """Search direct and one-stop flights between two airports on a date."""
    seed = _seed(origin, destination, date)
    rows = []
    for n, carrier in enumerate(("ANA", "JAL", "Lufthansa", "Finnair")):
        stops = "direct" if n < 2 else "1 stop (HEL)" if carrier == "Finnair" else "1 stop (FRA)"
        price = (950 if n < 2 else 760) + (seed * (n + 3)) % 60
        depart = 8 + (seed + 5 * n) % 12
        rows.append(
            f"{carrier:<10} {origin}->{destination} {date} dep {depart:02d}:40  {stops:<13} "
            f"EUR {price} per person, 23 kg bag included"
        )
    return "\n".join(rows)


_HOTELS = {
    "Tokyo": {"Hotel Gracery Shinjuku": 165, "Mitsui Garden Ginza": 190, "Sequence Miyashita": 140},
    "Kyoto": {"Ryokan Yachiyo": 280, "Hotel Kanra Kyoto": 145, "Nazuna Kyoto Tsubaki": 210},
    "Osaka": {"Cross Hotel Osaka": 130, "Hotel Hankyu Respire": 115, "Moxy Osaka Honmachi": 105},
}


@tool
def search_hotels(city: str, check_in: str, nights: int, max_price_eur: int) -> str:
    """Search hotels in a city for a stay, under a nightly price."""
    rows = []
    for n, (name, price) in enumerate(_HOTELS.get(city, {}).items()):
        if price > max_price_eur:
            continue
        rating = 8.1 + (_seed(name) % 9) / 10
        rows.append(
            f"{name}: EUR {price}/night, {nights} nights from {check_in}, rating {rating:.1f}, "
            f"{'breakfast included' if n % 2 == 0 else 'room only'}, free cancellation, "
            f"total EUR {price * nights}"
        )
    return "\n".join(rows) or f"No hotel in {city} under EUR {max_price_eur} a night."


@tool
def get_weather(city: str, month: str) -> str:
    """Typical weather of a city in a month."""
    seed = _seed(city, month)
    high, low, rain = 17 + seed % 6, 8 + seed % 5, 8 + seed % 7
    return (
        f"{city} in {month}: highs around {high} C, lows around {low} C, about {rain} rainy days. "
        "Cherry blossom season peaks early in the month; bring layers and a light rain jacket. "
        "Popular sights are crowded on weekends and during Golden Week (from April 29)."
    )


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount between currencies at today's reference rate."""
    rates = {"EUR": 1.0, "JPY": 162.4, "USD": 1.08, "GBP": 0.85}
    value = amount / rates[from_currency] * rates[to_currency]
    return (
        f"{amount:,.2f} {from_currency} = {value:,.2f} {to_currency} "
        f"(reference rate 1 EUR = {rates['JPY']} JPY; card fees of 1-2% not included)"
    )


TOOLS = [search_flights, search_hotels, get_weather, convert_currency]

TURNS: tuple[Turn, ...] = (
    Turn(
        "Hi! My partner and I want to plan a trip to Japan in April 2026, about ten days, "
        "flying from Berlin. Can you help?",
        "Gladly. Ten days in April is a lovely time: cherry blossoms in the first half. A "
        "classic first route is Tokyo, Kyoto and Osaka. What is your budget, and any "
        "must-sees?",
    ),
    Turn(
        "Budget is about 6,000 EUR for both of us, everything included. We love food, "
        "temples and walking. My partner has a peanut allergy, that is important.",
        "Noted: 6,000 EUR for two, food, temples, walking, and a peanut allergy, which we "
        "will plan around (I will suggest an allergy card in Japanese). Shall I look at "
        "flights first?",
    ),
    Turn(
        "Yes, please check flights from Berlin to Tokyo around April 2.",
        "ANA and JAL fly direct for about EUR 950-1,010 per person; one-stop flights via "
        "Frankfurt or Helsinki are about EUR 200 cheaper but five hours longer. For ten days "
        "I would fly direct.",
        "search_flights",
        {"origin": "BER", "destination": "HND", "date": "2026-04-02"},
    ),
    Turn(
        "Let's take the direct ANA one. What is the weather like in Tokyo then?",
        "Mild: highs around 20 C and some rain. Early April is peak blossom, so book the "
        "popular gardens (Shinjuku Gyoen) in the morning.",
        "get_weather",
        {"city": "Tokyo", "month": "April"},
    ),
    Turn(
        "How should we split the ten days between the cities?",
        "I suggest Tokyo 4 nights (Apr 3-7), Kyoto 3 nights (Apr 7-10) and Osaka 2 nights "
        "(Apr 10-12), flying home from Osaka Kansai (KIX) on April 12.",
    ),
    Turn(
        "Sounds good. Find us a hotel in Tokyo, max 180 EUR a night.",
        "Three good options under 180 EUR; Hotel Gracery Shinjuku has breakfast included and "
        "is next to the station, which helps with early starts.",
        "search_hotels",
        {"city": "Tokyo", "check_in": "2026-04-03", "nights": 4, "max_price_eur": 180},
    ),
    Turn(
        "Book-wise we'll go with Gracery Shinjuku. Is a JR Pass worth it for us?",
        "Since the 2023 price rise, no: Tokyo-Kyoto and Kyoto-Osaka by single tickets cost "
        "less than a 7-day pass. Use a Suica card in your phone wallet for city transport.",
    ),
    Turn(
        "OK, no JR Pass. How much is 14,000 JPY for the Shinkansen in EUR?",
        "About 86 EUR per person for Tokyo to Kyoto on the Nozomi.",
        "convert_currency",
        {"amount": 14000, "from_currency": "JPY", "to_currency": "EUR"},
    ),
    Turn(
        "What should we do on our first day in Tokyo? We land in the morning.",
        "Keep it light against jet lag: check in, walk Shinjuku Gyoen, then an early dinner "
        "in Omoide Yokocho. Asakusa and Senso-ji are best early on day 2.",
    ),
    Turn(
        "Can you suggest food experiences that are safe with a peanut allergy?",
        "Sushi, tempura, yakitori and shabu-shabu rarely involve peanuts; watch out for "
        "satay-style sauces, some dango and sweets. Carry the allergy card and ask "
        "'piinattsu haitte imasu ka?' when unsure.",
    ),
    Turn(
        "Please write me that allergy card text in Japanese.",
        "Here it is: 'Watashi no paatonaa wa piinattsu arerugii ga arimasu. Piinattsu to "
        "piinattsu yu o tsukatta ryouri wa taberaremasen.' Print it and keep it in a wallet.",
    ),
    Turn(
        "Now Kyoto: we'd love one night in a ryokan. Max 300 EUR.",
        "Ryokan Yachiyo near Nanzen-ji fits, with a kaiseki dinner; tell them about the "
        "peanut allergy when you book, ryokan kitchens handle it well with notice.",
        "search_hotels",
        {"city": "Kyoto", "check_in": "2026-04-07", "nights": 1, "max_price_eur": 300},
    ),
    Turn(
        "And two more nights in Kyoto somewhere cheaper, max 150 EUR.",
        "Hotel Kanra Kyoto is a good pick near Kyoto Station for the remaining two nights.",
        "search_hotels",
        {"city": "Kyoto", "check_in": "2026-04-08", "nights": 2, "max_price_eur": 150},
    ),
    Turn(
        "Which temples in Kyoto can't we miss?",
        "Fushimi Inari at sunrise, Kiyomizu-dera, the Philosopher's Path to Ginkaku-ji "
        "(blossoms!), and Nanzen-ji near your ryokan. Arashiyama's bamboo grove early too.",
    ),
    Turn(
        "Is the weather in Kyoto similar?",
        "Very similar, a little warmer in the afternoon; mornings can be chilly, so layers.",
        "get_weather",
        {"city": "Kyoto", "month": "April"},
    ),
    Turn(
        "We want a tea ceremony. Any tips?",
        "Book a small ceremony in Gion or at Camellia; sweets served with matcha are usually "
        "bean-based, but mention the allergy when booking anyway.",
    ),
    Turn(
        "Now Osaka. Hotel for two nights, max 140 EUR.",
        "Cross Hotel Osaka in Namba is the most convenient for food streets and the Nankai "
        "line to KIX on your last day.",
        "search_hotels",
        {"city": "Osaka", "check_in": "2026-04-10", "nights": 2, "max_price_eur": 140},
    ),
    Turn(
        "What should we eat in Osaka?",
        "Takoyaki, okonomiyaki and kushikatsu in Dotonbori and Kuromon Market; okonomiyaki "
        "sauce is usually peanut-free, but ask, since some shops add nut toppings.",
    ),
    Turn(
        "Can we do a day trip to Nara from Osaka or Kyoto?",
        "Yes, Nara is 45 minutes from either. Do it on April 10 on the way from Kyoto to "
        "Osaka: store your bags in coin lockers at Nara station.",
    ),
    Turn(
        "Check the return flight from Osaka on April 12.",
        "The Finnair one-stop via Helsinki is the cheapest, about EUR 200 below the direct "
        "ANA and JAL flights, and lands in Berlin the same evening.",
        "search_flights",
        {"origin": "KIX", "destination": "BER", "date": "2026-04-12"},
    ),
    Turn(
        "Take that one. What's our total so far?",
        "Roughly: flights 3,400 EUR, hotels 1,850 EUR, trains 260 EUR, for about 5,510 EUR; "
        "that leaves about 490 EUR for food and sights, which is tight for ten days.",
    ),
    Turn(
        "Hmm, that's tight. Where can we save?",
        "Swap the Kyoto ryokan night for the cheaper hotel (saves about 150 EUR) or take the "
        "one-stop outbound flight (saves about 200 EUR). I would keep the ryokan.",
    ),
    Turn(
        "Keep the ryokan, switch the outbound flight to the one-stop option.",
        "Done in the plan: outbound becomes the one-stop via Frankfurt on April 2, which "
        "frees about 200 EUR for food.",
    ),
    Turn(
        "How much is 700 EUR in yen, for our daily cash?",
        "About 113,700 JPY. Many places take cards now, but small restaurants and shrines "
        "often want cash.",
        "convert_currency",
        {"amount": 700, "from_currency": "EUR", "to_currency": "JPY"},
    ),
    Turn(
        "Do we need any visa as German citizens?",
        "No visa for stays up to 90 days; register on Visit Japan Web before you fly to "
        "speed up immigration and customs.",
    ),
    Turn(
        "What about mobile data?",
        "An eSIM with 10 GB for ten days costs about 20 EUR; install it before departure.",
    ),
    Turn(
        "Any etiquette we should know?",
        "No tipping, quiet on trains, shoes off in ryokan rooms and temples, and carry your "
        "rubbish home: bins are rare.",
    ),
    Turn(
        "Can you make a packing list?",
        "Layers, a light rain jacket, comfortable walking shoes, slip-on shoes for temples, "
        "the allergy card, an epinephrine auto-injector and its prescription, and a "
        "universal adapter (type A).",
    ),
    Turn(
        "Remind me the whole itinerary in one message, please.",
        "Apr 2 BER-FRA-HND; Apr 3-7 Tokyo (Gracery Shinjuku); Apr 7 Kyoto ryokan Yachiyo; "
        "Apr 8-10 Hotel Kanra Kyoto; Apr 10 Nara on the way; Apr 10-12 Osaka (Cross Hotel); "
        "Apr 12 KIX-HEL-BER. Budget about 5,310 EUR before food.",
    ),
    Turn(
        "Perfect, thank you! Anything we've forgotten?",
        "Travel insurance that covers allergies, and booking the Fushimi Inari sunrise and "
        "the tea ceremony in advance. Have a wonderful trip!",
    ),
)
